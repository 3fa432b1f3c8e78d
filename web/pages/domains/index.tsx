import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type FormEvent, useState } from 'react'
import { Link, useLocation } from 'wouter'
import { call, del, type Domain, get, type Project, post } from '../../api'
import { Badge, ConfirmButton, CopyButton, Empty, ErrorBox, Field, fieldError, formatDate, Loading, PageHead } from '../../components/ui'

const PURPOSE: Record<string, string> = {
  DKIM: 'DKIM signature (required)',
  RETURN_PATH_MX: 'Bounces (return path MX)',
  RETURN_PATH_SPF: 'SPF for the return path',
  DMARC: 'DMARC policy',
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
      <PageHead title="Domains" />
      <form className="card" onSubmit={submit} noValidate>
        <h2>Add a sending domain</h2>
        <ErrorBox error={add.error} shown={['domain']} />
        <div className="row">
          <Field label="Domain" name="domain" placeholder="example.com" required error={fieldError(add.error, 'domain')} />
          <button type="submit" disabled={add.isPending}>{add.isPending ? 'Adding…' : 'Add domain'}</button>
        </div>
      </form>
      <div className="card">
        {domains.isPending && <Loading />}
        <ErrorBox error={domains.error} />
        {domains.data?.length === 0 && <Empty title="No domains yet">Add the domain you send from; mailctl shows the DNS records to publish.</Empty>}
        {domains.data && domains.data.length > 0 && (
          <div className="table-wrap"><table className="stacked">
            <thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">Last checked</th></tr></thead>
            <tbody>{domains.data.map((d) => (
              <tr key={d.id}>
                <td><Link href={`/domains/${d.id}`}>{d.domain}</Link></td>
                <td><Badge status={d.verified ? 'verified' : 'pending'}>{d.verified ? 'Verified' : 'Not verified'}</Badge></td>
                <td data-label="Last checked: ">{formatDate(d.lastCheckedAt)}</td>
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
  if (!d) return <div className="card"><h1>Domain not found</h1><Link href="/domains">All domains</Link></div>
  return (
    <div>
      <PageHead title={d.domain}>
        <Badge status={d.verified ? 'verified' : 'pending'}>{d.verified ? 'Verified' : 'Not verified'}</Badge>
      </PageHead>
      <div className="card">
        <h2>DNS records to publish</h2>
        <p className="muted small">Add these at your DNS host. The DKIM record is required before mail from {d.domain} is sent; the others are recommended. Last checked: {formatDate(d.lastCheckedAt)}.</p>
        {checked && <div className="alert ok" role="status">Checked just now: {d.verified ? 'the domain is verified.' : 'see each record’s result below.'}</div>}
        <ErrorBox error={verify.error} />
        <div className="table-wrap"><table className="stacked">
          <thead><tr><th scope="col">Record</th><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Status</th></tr></thead>
          <tbody>{d.records.map((r) => (
            <tr key={`${r.purpose}-${r.name}`}>
              <td><strong>{r.type}</strong>{r.priority !== undefined && <span className="muted"> {r.priority}</span>}<div className="small muted">{PURPOSE[r.purpose] ?? r.purpose}</div></td>
              <td className="value" data-label="Name: "><code>{r.name}</code> <CopyButton text={r.name} label="Copy name" /></td>
              <td className="value" data-label="Value: "><code>{r.value}</code> <CopyButton text={r.value} label="Copy value" /></td>
              <td data-label="Status: "><Badge status={r.status} />{r.reason && <div className="small muted">{r.reason}</div>}</td>
            </tr>
          ))}</tbody>
        </table></div>
        <div className="row" style={{ marginTop: '1rem' }}>
          <button type="button" onClick={() => verify.mutate()} disabled={verify.isPending}>{verify.isPending ? 'Checking DNS…' : 'Verify now'}</button>
          <ConfirmButton label="Remove domain" confirm={`Remove ${d.domain}? Mail from it is refused from then on.`} onConfirm={() => remove.mutate()} busy={remove.isPending} />
        </div>
        <ErrorBox error={remove.error} />
      </div>
    </div>
  )
}
