import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from '@tanstack/react-query'
import { StrictMode, useEffect } from 'react'
import { createRoot } from 'react-dom/client'
import { Link, Redirect, Route, Router, Switch, useLocation, useParams } from 'wouter'
import { ApiError, canManage, get, type Project, type User } from './api'
import { ErrorBox, Loading } from './components/ui'
import { SignedOut, VerifyEmail } from './pages/auth'
import { ContactDetail, ContactsPage, contactsQuery } from './pages/contacts'
import { DomainDetail, DomainsPage } from './pages/domains'
import { NewSegment, SegmentDetail, SegmentsPage } from './pages/segments'
import { TemplateEditor, TemplatesPage } from './pages/templates'
import { CampaignPage, CampaignStatsPage, CampaignsPage, NewCampaign } from './pages/campaigns'
import { WorkflowEditor, WorkflowExecutions, WorkflowsPage } from './pages/workflows'
import { CreateProject, KeysPage, MembersPage, Overview, SettingsPage } from './pages/projects'
import { AnalyticsPage, SecurityPage, UsagePage } from './pages/analytics'
import { ActivityPage, EmailDetail, SuppressionsPage } from './pages/mail'
import { ToolsPage } from './pages/tools'

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
queryClient.prefetchQuery(meQuery)
queryClient.prefetchQuery({ ...projectsQuery, retry: false })
const opened = /^\/app\/p\/([^/]+)\/contacts\/?$/.exec(location.pathname)
if (opened) queryClient.prefetchQuery({ ...contactsQuery(decodeURIComponent(opened[1]), '', '', null), retry: false })

function App() {
  const me = useQuery(meQuery)
  if (me.isPending) return <div className="center"><Loading /></div>
  if (me.error) return <div className="center"><ErrorBox error={me.error} /></div>
  if (!me.data) return <SignedOut />
  return <SignedIn user={me.data} />
}

function SignedIn({ user }: { user: User }) {
  const projects = useQuery(projectsQuery)
  if (projects.isPending) return <div className="center"><Loading /></div>
  if (projects.error) return <div className="center"><ErrorBox error={projects.error} /></div>
  return (
    <Switch>
      <Route path="/verify-email"><VerifyEmail /></Route>
      <Route path="/projects/new"><Bare user={user}><CreateProject first={projects.data.length === 0} /></Bare></Route>
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
  return <button type="button" className="secondary small" onClick={out}>Sign out</button>
}

/** A page outside any project (creating one), with the user's controls. */
function Bare({ user, children }: { user: User; children: React.ReactNode }) {
  return (
    <div className="shell">
      <aside className="side">
        <Link className="brand" href="/">mailctl</Link>
        <div className="user"><span>{user.email}</span><SignOut /></div>
      </aside>
      <main id="main">{children}</main>
    </div>
  )
}

const NAV: Array<{ path: string; label: string; managers?: boolean }> = [
  { path: '/', label: 'Overview' },
  { path: '/domains', label: 'Domains' },
  { path: '/contacts', label: 'Contacts' },
  { path: '/segments', label: 'Segments' },
  { path: '/templates', label: 'Templates' },
  { path: '/campaigns', label: 'Campaigns' },
  { path: '/workflows', label: 'Workflows' },
  { path: '/activity', label: 'Activity' },
  { path: '/suppressions', label: 'Suppressions' },
  { path: '/analytics', label: 'Analytics' },
  { path: '/security', label: 'Security' },
  { path: '/usage', label: 'Usage' },
  { path: '/tools', label: 'Tools' },
  { path: '/settings', label: 'Settings', managers: true },
  { path: '/keys', label: 'API keys', managers: true },
  { path: '/members', label: 'Members' },
]

function ProjectShell({ user, projects }: { user: User; projects: Project[] }) {
  const { pid } = useParams<{ pid: string }>()
  const [location, navigate] = useLocation()
  const project = projects.find((p) => p.id === pid)
  useEffect(() => { if (project) localStorage.setItem(LAST_PROJECT, project.id) }, [project])
  const section = `/${location.split('/')[1] ?? ''}`
  return (
    <div className="shell">
      <a className="skip" href="#main">Skip to content</a>
      <aside className="side">
        <Link className="brand" href="~/app/">mailctl</Link>
        <label htmlFor="project-switch">Project</label>
        <select id="project-switch" value={pid} onChange={(e) => {
          if (e.target.value === '__new') navigate('~/app/projects/new')
          else navigate(`~/app/p/${e.target.value}${section === '/' ? '' : section}`)
        }}>
          {!project && <option value={pid}>Unknown project</option>}
          {projects.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          <option value="__new">+ New project…</option>
        </select>
        <nav aria-label="Sections">
          {NAV.filter((n) => !n.managers || canManage(project?.role)).map((n) => (
            <Link key={n.path} href={n.path} aria-current={section === n.path ? 'page' : undefined}>{n.label}</Link>
          ))}
        </nav>
        <div className="user"><span>{user.email}{project && <><br />Role: {project.role}</>}</span><SignOut /></div>
      </aside>
      <main id="main">
        {!project ? (
          <div className="card"><h1>Project not found</h1><p>This project does not exist or you are not a member of it.</p><Link href="~/app/">Go to your projects</Link></div>
        ) : (
          <Switch>
            <Route path="/"><Overview project={project} /></Route>
            <Route path="/domains"><DomainsPage project={project} /></Route>
            <Route path="/domains/:id">{(p) => <DomainDetail project={project} id={p.id} />}</Route>
            <Route path="/contacts"><ContactsPage project={project} /></Route>
            <Route path="/contacts/:id">{(p) => <ContactDetail project={project} id={p.id} />}</Route>
            <Route path="/segments"><SegmentsPage project={project} /></Route>
            <Route path="/segments/new"><NewSegment project={project} /></Route>
            <Route path="/segments/:id">{(p) => <SegmentDetail project={project} id={p.id} />}</Route>
            <Route path="/templates"><TemplatesPage project={project} /></Route>
            <Route path="/templates/:id">{(p) => <TemplateEditor project={project} id={p.id} />}</Route>
            <Route path="/campaigns"><CampaignsPage project={project} /></Route>
            <Route path="/campaigns/new"><NewCampaign project={project} /></Route>
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
            <Route path="/members"><MembersPage project={project} user={user} /></Route>
            <Route><div className="card"><h1>Page not found</h1><Link href="/">Back to the overview</Link></div></Route>
          </Switch>
        )}
      </main>
    </div>
  )
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router base="/app">
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
)
