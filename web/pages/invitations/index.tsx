import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useLocation, useSearch } from 'wouter'
import { get, type Invitation, type InvitationAccepted, post } from '../../api'
import { Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'
import { t } from '../../i18n'

/**
 * The signed-in user's pending invitations: nothing is joined until they accept here or
 * through the emailed link (/app/invitations?token=…). A project's name is its owner's text, shown as text
 * and said to be so; the inviter is named by their verified address.
 */
export function InvitationsPage() {
  const qc = useQueryClient()
  const [, navigate] = useLocation()
  const token = new URLSearchParams(useSearch()).get('token')
  const list = useQuery({ queryKey: ['invitations'], queryFn: () => get<Invitation[]>('/users/@me/invitations') })
  const joined = async (a: InvitationAccepted) => {
    await qc.invalidateQueries({ queryKey: ['projects'] })
    await qc.invalidateQueries({ queryKey: ['invitations'] })
    navigate(`/p/${encodeURIComponent(a.projectId)}`)
  }
  const byLink = useMutation({ mutationFn: () => post<InvitationAccepted>('/users/@me/invitations/accept', { token }), onSuccess: joined })
  const accept = useMutation({ mutationFn: (id: string) => post<InvitationAccepted>(`/users/@me/invitations/${encodeURIComponent(id)}/accept`), onSuccess: joined })
  const decline = useMutation({
    mutationFn: (id: string) => post<void>(`/users/@me/invitations/${encodeURIComponent(id)}/decline`),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['invitations'] }),
  })
  const busy = byLink.isPending || accept.isPending || decline.isPending
  return (
    <div className="stack">
      <PageHead title={t('shell.invitations')} />
      {token && (
        <div className="card">
          <h2>{t('inv.fromEmail')}</h2>
          <p>{t('inv.fromEmailText')}</p>
          <ErrorBox error={byLink.error} />
          {byLink.error && <p className="muted small">{t('inv.linkRules')}</p>}
          <button type="button" onClick={() => byLink.mutate()} disabled={busy}>{t('inv.acceptLink')}</button>
        </div>
      )}
      <div className="card">
        <h2>{t('inv.pending')}</h2>
        <ErrorBox error={accept.error ?? decline.error} />
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && list.data.length === 0 && (
          <Empty title={t('inv.none')}>{t('inv.noneText')}</Empty>
        )}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">{t('inv.project')}</th><th scope="col">{t('inv.role')}</th><th scope="col">{t('inv.invitedBy')}</th><th scope="col">{t('inv.expires')}</th><th scope="col"><span className="skip">{t('fields.actions')}</span></th></tr></thead>
            <tbody>
              {list.data.map((i) => (
                <tr key={i.id}>
                  <td>{i.projectName}</td>
                  <td>{i.role}</td>
                  <td>{i.invitedBy ?? <span className="muted">{t('inv.deletedAccount')}</span>}</td>
                  <td>{formatDate(i.expiresAt)}</td>
                  <td><div className="row">
                    <button type="button" onClick={() => accept.mutate(i.id)} disabled={busy} aria-label={t('inv.acceptTo', { name: i.projectName })}>{t('inv.accept')}</button>
                    <button type="button" className="secondary" onClick={() => decline.mutate(i.id)} disabled={busy} aria-label={t('inv.declineTo', { name: i.projectName })}>{t('inv.decline')}</button>
                  </div></td>
                </tr>
              ))}
            </tbody>
          </table></div>
        )}
      </div>
    </div>
  )
}
