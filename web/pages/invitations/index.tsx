import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useLocation, useSearch } from 'wouter'
import { get, type Invitation, type InvitationAccepted, post } from '../../api'
import { Empty, ErrorBox, formatDate, Loading, PageHead } from '../../components/ui'

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
      <PageHead title="Invitations" />
      {token && (
        <div className="card">
          <h2>The invitation from your email</h2>
          <p>Accepting makes you a member of the project you were invited to, with the role named in the email. Nothing happens until you do.</p>
          <ErrorBox error={byLink.error} />
          {byLink.error && <p className="muted small">The link works once, for the address it was sent to, for 7 days; a newer invitation replaces it.</p>}
          <button type="button" onClick={() => byLink.mutate()} disabled={busy}>Accept the invitation from the link</button>
        </div>
      )}
      <div className="card">
        <h2>Pending invitations</h2>
        <ErrorBox error={accept.error ?? decline.error} />
        {list.isPending && <Loading />}
        <ErrorBox error={list.error} />
        {list.data && list.data.length === 0 && (
          <Empty title="No pending invitations">Invitations to your verified email address appear here until you answer them or they expire.</Empty>
        )}
        {list.data && list.data.length > 0 && (
          <div className="table-wrap"><table>
            <thead><tr><th scope="col">Project (name chosen by its owner)</th><th scope="col">Role</th><th scope="col">Invited by</th><th scope="col">Expires</th><th scope="col"><span className="skip">Actions</span></th></tr></thead>
            <tbody>
              {list.data.map((i) => (
                <tr key={i.id}>
                  <td>{i.projectName}</td>
                  <td>{i.role}</td>
                  <td>{i.invitedBy ?? <span className="muted">a deleted account</span>}</td>
                  <td>{formatDate(i.expiresAt)}</td>
                  <td><div className="row">
                    <button type="button" onClick={() => accept.mutate(i.id)} disabled={busy} aria-label={`Accept the invitation to ${i.projectName}`}>Accept</button>
                    <button type="button" className="secondary" onClick={() => decline.mutate(i.id)} disabled={busy} aria-label={`Decline the invitation to ${i.projectName}`}>Decline</button>
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
