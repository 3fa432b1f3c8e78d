import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from '@tanstack/react-query'
import { type ComponentType, lazy, StrictMode, Suspense, useEffect, useState } from 'react'
import { createRoot } from 'react-dom/client'
import { Link, Redirect, Route, Router, Switch, useLocation, useParams } from 'wouter'
import { ApiError, canManage, type ContactPage, get, type Project, type User } from './api'
import { ErrorBox, Loading } from './components/ui'
import { startTheme, ThemeSwitch } from './components/theme'
import { releaseFirstView } from './first-view'
import { chooseLanguage, currentLang, followUser, LANGUAGES, type Lang, type MessageKey, startLanguage, t } from './i18n'
import { CONTACTS_PAGE_PATH, NAV } from './nav'

startTheme()

/**
 * Each area of pages is a chunk of its own (the first load carries the shell, React and
 * the API client); the router loads an area's chunk when one of its pages is first opened.
 */
function lazyPage<P extends object>(load: () => Promise<ComponentType<P>>) {
  return lazy(async () => ({ default: await load() }))
}
const auth = () => import('./pages/auth')
const contacts = () => import('./pages/contacts')
const domains = () => import('./pages/domains')
const segments = () => import('./pages/segments')
const templates = () => import('./pages/templates')
const campaigns = () => import('./pages/campaigns')
const workflows = () => import('./pages/workflows')
const projectPages = () => import('./pages/projects')
const analytics = () => import('./pages/analytics')
const mail = () => import('./pages/mail')
const tools = () => import('./pages/tools')
const invitations = () => import('./pages/invitations')
const webhooks = () => import('./pages/webhooks')
const SignedOut = lazyPage(() => auth().then((m) => m.SignedOut))
const VerifyEmail = lazyPage(() => auth().then((m) => m.VerifyEmail))
const ContactsPage = lazyPage(() => contacts().then((m) => m.ContactsPage))
const ContactDetail = lazyPage(() => contacts().then((m) => m.ContactDetail))
const FieldsPage = lazyPage(() => contacts().then((m) => m.FieldsPage))
const DomainsPage = lazyPage(() => domains().then((m) => m.DomainsPage))
const DomainDetail = lazyPage(() => domains().then((m) => m.DomainDetail))
const SegmentsPage = lazyPage(() => segments().then((m) => m.SegmentsPage))
const NewSegment = lazyPage(() => segments().then((m) => m.NewSegment))
const SegmentDetail = lazyPage(() => segments().then((m) => m.SegmentDetail))
const TemplatesPage = lazyPage(() => templates().then((m) => m.TemplatesPage))
const TemplateEditor = lazyPage(() => templates().then((m) => m.TemplateEditor))
const CampaignsPage = lazyPage(() => campaigns().then((m) => m.CampaignsPage))
const NewCampaign = lazyPage(() => campaigns().then((m) => m.NewCampaign))
const CampaignPage = lazyPage(() => campaigns().then((m) => m.CampaignPage))
const CampaignStatsPage = lazyPage(() => campaigns().then((m) => m.CampaignStatsPage))
const CampaignRecipientsPage = lazyPage(() => campaigns().then((m) => m.CampaignRecipientsPage))
const WorkflowsPage = lazyPage(() => workflows().then((m) => m.WorkflowsPage))
const WorkflowEditor = lazyPage(() => workflows().then((m) => m.WorkflowEditor))
const WorkflowExecutions = lazyPage(() => workflows().then((m) => m.WorkflowExecutions))
const CreateProject = lazyPage(() => projectPages().then((m) => m.CreateProject))
const Overview = lazyPage(() => projectPages().then((m) => m.Overview))
const SettingsPage = lazyPage(() => projectPages().then((m) => m.SettingsPage))
const KeysPage = lazyPage(() => projectPages().then((m) => m.KeysPage))
const MembersPage = lazyPage(() => projectPages().then((m) => m.MembersPage))
const AnalyticsPage = lazyPage(() => analytics().then((m) => m.AnalyticsPage))
const SecurityPage = lazyPage(() => analytics().then((m) => m.SecurityPage))
const UsagePage = lazyPage(() => analytics().then((m) => m.UsagePage))
const ActivityPage = lazyPage(() => mail().then((m) => m.ActivityPage))
const EmailDetail = lazyPage(() => mail().then((m) => m.EmailDetail))
const SuppressionsPage = lazyPage(() => mail().then((m) => m.SuppressionsPage))
const ToolsPage = lazyPage(() => tools().then((m) => m.ToolsPage))
const InvitationsPage = lazyPage(() => invitations().then((m) => m.InvitationsPage))
const WebhooksPage = lazyPage(() => webhooks().then((m) => m.WebhooksPage))
const WebhookEndpointPage = lazyPage(() => webhooks().then((m) => m.WebhookEndpointPage))

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // An answer of the API (4xx) is final; only a failed connection or a 5xx is tried again.
      retry: (n, err) => n < 2 && !(err instanceof ApiError && err.status > 0 && err.status < 500),
      staleTime: 15_000,
      refetchOnWindowFocus: false,
    },
  },
})

const LAST_PROJECT = 'mailctl.project'

const projectsQuery = { queryKey: ['projects'], queryFn: () => get<Project[]>('/users/@me/projects') }

// The first requests go out together rather than one after another: the user, their projects, and the
// data of the page opened (a contacts list of a large project is the slowest of them).
const meQuery = {
  queryKey: ['me'],
  queryFn: () => get<User | null>('/users/@me').catch((e) => {
    if (e instanceof ApiError && e.status === 401) return null
    throw e
  }),
}
/**
 * The answers the server wrote into the page for this session (src/http/dashboard-boot.ts): the user,
 * their projects and, on the contacts page, its first rows. They are in the cache before anything asks,
 * so the first page is drawn without a round trip to the API; a page without them asks as before.
 */
interface Boot { me: User; projects: Project[]; contacts?: { projectId: string; page: ContactPage } }
function readBoot(): Boot | null {
  const text = document.getElementById('mailctl-boot')?.textContent
  if (!text) return null
  try { return JSON.parse(text) as Boot } catch { return null }
}
const boot = readBoot()
if (boot) {
  queryClient.setQueryData(meQuery.queryKey, boot.me)
  queryClient.setQueryData(projectsQuery.queryKey, boot.projects)
}
queryClient.prefetchQuery(meQuery)
queryClient.prefetchQuery({ ...projectsQuery, retry: false })
// The contacts page opened directly: its chunk and its first page of contacts are fetched with the rest
// (or come with the page).
const opened = CONTACTS_PAGE_PATH.exec(location.pathname)
// A malformed escape in the address (`/app/p/%/contacts`) is the router's to answer (not found), not a crash here.
const projectId = opened ? safeDecode(opened[1]) : null
if (projectId !== null) {
  const first = boot?.contacts?.projectId === projectId ? boot.contacts.page : null
  contacts().then((m) => {
    const query = m.contactsQuery(projectId, '', '', null)
    if (first) queryClient.setQueryData(query.queryKey, first)
    else return queryClient.prefetchQuery({ ...query, retry: false })
  }).catch(() => {})
}

function App() {
  const me = useQuery(meQuery)
  useEffect(() => { if (me.data) followUser(me.data.id) }, [me.data])
  // The server's first view (web/first-view.ts) gives way to whatever the app shows instead of the contacts list.
  useEffect(() => { if (me.error || me.data === null) releaseFirstView() }, [me.error, me.data])
  if (me.isPending) return <div className="center"><Loading /></div>
  if (me.error) return <div className="center"><ErrorBox error={me.error} /></div>
  return <Suspense fallback={<div className="center"><Loading /></div>}>{me.data ? <SignedIn user={me.data} /> : <SignedOut />}</Suspense>
}

function SignedIn({ user }: { user: User }) {
  const projects = useQuery(projectsQuery)
  useEffect(() => { if (projects.error) releaseFirstView() }, [projects.error])
  if (projects.isPending) return <div className="center"><Loading /></div>
  if (projects.error) return <div className="center"><ErrorBox error={projects.error} /></div>
  return (
    <Switch>
      <Route path="/verify-email"><VerifyEmail /></Route>
      <Route path="/projects/new"><Bare user={user}><CreateProject first={projects.data.length === 0} /></Bare></Route>
      <Route path="/invitations"><Bare user={user}><InvitationsPage /></Bare></Route>
      <Route path="/p/:pid" nest><ProjectShell user={user} projects={projects.data} /></Route>
      <Route><Home projects={projects.data} /></Route>
    </Switch>
  )
}

/** The last project used, else the first; a user without projects creates one. */
function Home({ projects }: { projects: Project[] }) {
  if (projects.length === 0) return <Redirect to="/projects/new" replace />
  const last = localStorage.getItem(LAST_PROJECT)
  const p = projects.find((x) => x.id === last) ?? projects[0]
  return <Redirect to={`/p/${p.id}`} replace />
}

function SignOut() {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const out = async () => {
    await get('/auth/logout').catch(() => {})
    // Everything cached belonged to the user; ['me'] stays observed by App and turns to "signed out".
    qc.removeQueries({ predicate: (q) => q.queryKey[0] !== 'me' })
    qc.setQueryData(['me'], null)
    navigate('~/app/', { replace: true })
  }
  return <button type="button" className="secondary small" onClick={out}>{t('shell.signOut')}</button>
}

/** The user's language (web/i18n): kept for them on this browser; choosing one draws the page again in it. */
function LanguageSwitch({ user }: { user: User }) {
  return (
    <span className="theme-switch">
      <label htmlFor="language-switch">{t('shell.language')}</label>
      <select id="language-switch" value={currentLang()} onChange={(e) => chooseLanguage(user.id, e.target.value as Lang)}>
        {LANGUAGES.map((l) => <option key={l.id} value={l.id} lang={l.id}>{l.name}</option>)}
      </select>
    </span>
  )
}

function UserBox({ user, project }: { user: User; project?: Project }) {
  return (
    <div className="user">
      <span>{user.email}{project && <><br />{t('shell.role', { role: t(`role.${project.role}`) })}</>}</span>
      <Link href="~/app/invitations">{t('shell.invitations')}</Link><ThemeSwitch /><LanguageSwitch user={user} /><SignOut />
    </div>
  )
}

/** A page outside any project (creating one), with the user's controls. */
function Bare({ user, children }: { user: User; children: React.ReactNode }) {
  return (
    <div className="shell">
      <aside className="side">
        <Link className="brand" href="/">mailctl</Link>
        <UserBox user={user} />
      </aside>
      <main id="main"><Suspense fallback={<Loading />}>{children}</Suspense></main>
    </div>
  )
}

/** Titles of the pages that are not a section of their own (a detail page names what it shows). */
const DETAIL_TITLES: Array<[RegExp, MessageKey]> = [
  [/^\/contacts\/fields$/, 'title.fields'], [/^\/contacts\/.+/, 'title.contact'], [/^\/domains\/.+/, 'title.domain'], [/^\/segments\/new$/, 'title.newSegment'],
  [/^\/segments\/.+/, 'title.segment'], [/^\/templates\/.+/, 'title.template'], [/^\/campaigns\/new$/, 'title.newCampaign'],
  [/^\/campaigns\/[^/]+\/stats$/, 'title.campaignReport'], [/^\/campaigns\/[^/]+\/recipients$/, 'title.campaignRecipients'], [/^\/campaigns\/.+/, 'title.campaign'],
  [/^\/workflows\/[^/]+\/executions$/, 'title.workflowExecutions'], [/^\/workflows\/.+/, 'title.workflow'], [/^\/emails\/.+/, 'title.email'],
  [/^\/webhooks\/.+/, 'title.webhook'],
]

/** The tab's title for a path inside a project: "Contacts · Acme · mailctl". */
export function pageTitle(location: string, project: string | undefined): string {
  const section = `/${location.split('/')[1] ?? ''}`
  const key = DETAIL_TITLES.find(([re]) => re.test(location))?.[1]
    ?? NAV.flatMap((g) => g.links).find((l) => l.path === section)?.label ?? 'title.notFound'
  return [t(key), project, 'mailctl'].filter(Boolean).join(' · ')
}

function SideNav({ section, role }: { section: string; role: Project['role'] | undefined }) {
  // Open at one location: following a link closes it.
  const [location] = useLocation()
  const [openAt, setOpenAt] = useState<string | null>(null)
  const open = openAt === location
  const setOpen = (v: boolean) => setOpenAt(v ? location : null)
  return (
    <>
      <button type="button" className="menu-toggle secondary small" aria-expanded={open} aria-controls="sections" onClick={() => setOpen(!open)}>
        {t('shell.menu')}
      </button>
      <nav id="sections" aria-label={t('shell.sections')} className={open ? 'open' : undefined}>
        {NAV.map((g) => {
          const links = g.links.filter((n) => !n.managers || canManage(role))
          if (links.length === 0) return null
          const items = links.map((n) => (
            <Link key={n.path} href={n.path} aria-current={section === n.path ? 'page' : undefined}>{t(n.label)}</Link>
          ))
          if (!g.group) return <div key="top" className="nav-group">{items}</div>
          return (
            <div key={g.group} className="nav-group">
              <span className="nav-title">{t(g.group)}</span>
              {items}
            </div>
          )
        })}
      </nav>
    </>
  )
}

function ProjectShell({ user, projects }: { user: User; projects: Project[] }) {
  const { pid } = useParams<{ pid: string }>()
  const [location, navigate] = useLocation()
  const project = projects.find((p) => p.id === pid)
  useEffect(() => { if (project) localStorage.setItem(LAST_PROJECT, project.id) }, [project])
  const section = `/${location.split('/')[1] ?? ''}`
  useEffect(() => { document.title = pageTitle(location, project?.name) }, [location, project?.name])
  useEffect(() => { if (!project || location !== '/contacts') releaseFirstView() }, [project, location])
  return (
    <div className="shell">
      <a className="skip" href="#main">{t('shell.skip')}</a>
      <aside className="side">
        <Link className="brand" href="~/app/">mailctl</Link>
        <label htmlFor="project-switch">{t('shell.project')}</label>
        <select id="project-switch" value={pid} onChange={(e) => {
          if (e.target.value === '__new') navigate('~/app/projects/new')
          else navigate(`~/app/p/${e.target.value}${section === '/' ? '' : section}`)
        }}>
          {!project && <option value={pid}>{t('shell.unknownProject')}</option>}
          {projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          <option value="__new">{t('shell.newProject')}</option>
        </select>
        <SideNav section={section} role={project?.role} />
        <UserBox user={user} project={project} />
      </aside>
      <main id="main">
        {!project ? (
          <div className="card"><h1>{t('shell.projectNotFound')}</h1><p>{t('shell.projectNotFoundText')}</p><Link href="~/app/">{t('shell.toProjects')}</Link></div>
        ) : (
          <Suspense fallback={<Loading />}>
          <Switch>
            <Route path="/"><Overview project={project} /></Route>
            <Route path="/domains"><DomainsPage project={project} /></Route>
            <Route path="/domains/:id">{(p) => <DomainDetail project={project} id={p.id} />}</Route>
            <Route path="/contacts"><ContactsPage project={project} /></Route>
            <Route path="/contacts/fields"><FieldsPage project={project} /></Route>
            <Route path="/contacts/:id">{(p) => <ContactDetail project={project} id={p.id} />}</Route>
            <Route path="/segments"><SegmentsPage project={project} /></Route>
            <Route path="/segments/new"><NewSegment project={project} /></Route>
            <Route path="/segments/:id">{(p) => <SegmentDetail project={project} id={p.id} />}</Route>
            <Route path="/templates"><TemplatesPage project={project} /></Route>
            <Route path="/templates/:id">{(p) => <TemplateEditor project={project} id={p.id} />}</Route>
            <Route path="/campaigns"><CampaignsPage project={project} /></Route>
            <Route path="/campaigns/new"><NewCampaign project={project} /></Route>
            <Route path="/campaigns/:id/recipients">{(p) => <CampaignRecipientsPage project={project} id={p.id} />}</Route>
            <Route path="/campaigns/:id/stats">{(p) => <CampaignStatsPage project={project} id={p.id} />}</Route>
            <Route path="/campaigns/:id">{(p) => <CampaignPage key={p.id} project={project} id={p.id} />}</Route>
            <Route path="/analytics"><AnalyticsPage project={project} /></Route>
            <Route path="/security"><SecurityPage project={project} /></Route>
            <Route path="/usage"><UsagePage project={project} /></Route>
            <Route path="/activity"><ActivityPage project={project} /></Route>
            <Route path="/emails/:id">{(p) => <EmailDetail project={project} id={p.id} />}</Route>
            <Route path="/suppressions"><SuppressionsPage project={project} /></Route>
            <Route path="/tools"><ToolsPage project={project} /></Route>
            <Route path="/workflows"><WorkflowsPage project={project} /></Route>
            <Route path="/workflows/:id">{(p) => <WorkflowEditor key={p.id} project={project} id={p.id} />}</Route>
            <Route path="/workflows/:id/executions">{(p) => <WorkflowExecutions key={p.id} project={project} id={p.id} />}</Route>
            <Route path="/settings"><SettingsPage project={project} /></Route>
            <Route path="/keys"><KeysPage project={project} /></Route>
            <Route path="/webhooks"><WebhooksPage project={project} /></Route>
            <Route path="/webhooks/:id">{(p) => <WebhookEndpointPage key={p.id} project={project} id={p.id} />}</Route>
            <Route path="/members"><MembersPage project={project} user={user} /></Route>
            <Route><div className="card"><h1>{t('title.notFound')}</h1><Link href="/">{t('shell.toOverview')}</Link></div></Route>
          </Switch>
          </Suspense>
        )}
      </main>
    </div>
  )
}

// The language's catalogue is loaded before anything is drawn (German is a chunk of its own).
await startLanguage()
createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router base="/app">
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
)

function safeDecode(s: string): string | null {
  try { return decodeURIComponent(s) } catch { return null }
}
