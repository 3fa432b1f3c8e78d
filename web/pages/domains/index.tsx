import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { call, del, type Domain, get, type Project, post } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'
import { type MessageKey, t } from '../../i18n'

const PURPOSE: Record<string, MessageKey> = {
  DKIM: 'domains.purpose.DKIM',
  RETURN_PATH_MX: 'domains.purpose.RETURN_PATH_MX',
  RETURN_PATH_SPF: 'domains.purpose.RETURN_PATH_SPF',
  DMARC: 'domains.purpose.DMARC',
}

function useDomains(project: Project) {
  return useQuery({ queryKey: ['domains', project.id], queryFn: () => get<Domain[]>(`/domains/project/${project.id}`, project.id) })
}

export function DomainsPage({ project }: { project: Project }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const domains = useDomains(project)
  const add = useMutation({
    mutationFn: (domain: string) => post<Domain>('/domains', { projectId: project.id, domain }, project.id),
    onSuccess: async (d) => { await qc.invalidateQueries({ queryKey: ['domains', project.id] }); navigate(`/domains/${d.id}`) },
  })
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    add.mutate(String(new FormData(e.currentTarget).get('domain') ?? '').trim())
  }
  return (
    <div>
      <PageHead title={t('nav.domains')} />
      <form className="card" onSubmit={submit} noValidate>
        <h2>{t('domains.add')}</h2>
        <ErrorBox error={add.error} shown={['domain']} />
        <div className="row">
          <Field label={t('domains.domain')} name="domain" placeholder="example.com" required error={fieldError(add.error, 'domain')} />
          <button type="submit" disabled={add.isPending}>{add.isPending ? t('domains.adding') : t('domains.addButton')}</button>
        </div>
      </form>
      <div className="card">
        {domains.isPending && <Loading />}
        <ErrorBox error={domains.error} />
        {domains.data?.length === 0 && <Empty title={t('domains.none')}>{t('domains.noneText')}</Empty>}
        {domains.data && domains.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">{t('domains.domain')}</th><th scope="col">{t('domains.status')}</th><th scope="col">{t('domains.lastChecked')}</th></tr></thead>
            <tbody>{domains.data.map((d) => (
              <tr key={d.id}>
                <td><Link href={`/domains/${d.id}`}>{d.domain}</Link></td>
                <td><Badge status={d.verified ? 'verified' : 'pending'}>{d.verified ? t('domains.verified') : t('domains.notVerified')}</Badge></td>
                <td data-label={t('domains.lastCheckedLabel')}>{formatDate(d.lastCheckedAt)}</td>
              </tr>
            ))}</tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}

export function DomainDetail({ project, id }: { project: Project; id: string }) {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const domains = useDomains(project)
  const [checked, setChecked] = useState(false)
  const verify = useMutation({
    mutationFn: () => call<Domain>('GET', `/domains/${id}/verify`, { project: project.id }),
    onSuccess: (d) => {
      qc.setQueryData<Domain[]>(['domains', project.id], (list) => list?.map((x) => (x.id === d.id ? d : x)))
      setChecked(true)
    },
  })
  const remove = useMutation({
    mutationFn: () => del(`/domains/${id}`, project.id),
    onSuccess: async () => { await qc.invalidateQueries({ queryKey: ['domains', project.id] }); navigate('/domains') },
  })
  if (domains.isPending) return <Loading />
  if (domains.error) return <ErrorBox error={domains.error} />
  const d = domains.data.find((x) => x.id === id)
  if (!d) return <div className="card"><h1>{t('domains.notFound')}</h1><Link href="/domains">{t('domains.all')}</Link></div>
  return (
    <div>
      <PageHead title={d.domain}>
        <Badge status={d.verified ? 'verified' : 'pending'}>{d.verified ? t('domains.verified') : t('domains.notVerified')}</Badge>
      </PageHead>
      <div className="card">
        <h2>{t('domains.records')}</h2>
        <p className="muted small">{t('domains.recordsText', { domain: d.domain, at: formatDate(d.lastCheckedAt) })}</p>
        {checked && <div className="alert ok" role="status">{d.verified ? t('domains.checkedVerified') : t('domains.checkedSee')}</div>}
        <ErrorBox error={verify.error} />
        <div className="table-wrap"><table className="stacked">
          <thead><tr><th scope="col">{t('domains.record')}</th><th scope="col">{t('domains.name')}</th><th scope="col">{t('domains.value')}</th><th scope="col">{t('domains.status')}</th></tr></thead>
          <tbody>{d.records.map((r) => (
            <tr key={`${r.purpose}-${r.name}`}>
              <td><strong>{r.type}</strong>{r.priority !== undefined && <span className="muted"> {r.priority}</span>}<div className="small muted">{PURPOSE[r.purpose] ? t(PURPOSE[r.purpose]) : r.purpose}</div></td>
              <td className="value" data-label={t('domains.nameLabel')}><code>{r.name}</code> <CopyButton text={r.name} label={t('domains.copyName')} /></td>
              <td className="value" data-label={t('domains.valueLabel')}><code>{r.value}</code> <CopyButton text={r.value} label={t('domains.copyValue')} /></td>
              <td data-label={t('domains.statusLabel')}><Badge status={r.status} />{r.reason && <div className="small muted">{r.reason}</div>}</td>
            </tr>
          ))}</tbody>
        </table></div>
        <div className="row" style={{ marginTop: '1rem' }}>
          <button type="button" onClick={() => verify.mutate()} disabled={verify.isPending}>{verify.isPending ? t('domains.checking') : t('domains.verify')}</button>
          <ConfirmButton label={t('domains.remove')} confirm={t('domains.removeConfirm', { domain: d.domain })} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
        <ErrorBox error={remove.error} />
      </div>
    </div>
  )
}
