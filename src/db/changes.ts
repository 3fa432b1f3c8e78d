import postgres from 'postgres'
import { PG_CONNECT_TIMEOUT_S } from './pg-guard'

/**
 * Tables whose every committed change is announced on PostgreSQL (migration 0031: a statement trigger
 * calls `pg_notify('mailctl_changes', <table>)`, delivered to listeners when the writing transaction
 * commits). Only tables that change rarely and are read on hot paths belong here.
 */
export type WatchedTable = 'projects'

/** The channel of the change notices (migrations/pg/0031_change_notices.sql). */
export const CHANGE_CHANNEL = 'mailctl_changes'

/** How long a listener waits before connecting again after its connection closed. */
const RELISTEN_MS = 1_000

/**
 * A number that changes whenever a committed transaction of any node changed a watched table, read from
 * a connection of its own that LISTENs to the change notices; the PostgreSQL side of
 * `Store.changeVersion`. It starts listening at the first call, and is null until the LISTEN is in place
 * and again from the moment its connection closes until it is listening again: a cache keyed on it is
 * used only while every change would be seen. Each (re)start of the listening moves the number too, so
 * nothing cached before a gap survives it.
 */
export class PgChangeWatch {
  private sql: postgres.Sql | null = null
  private listening = false
  private counter = 0
  private retry: ReturnType<typeof setTimeout> | null = null
  private stopped = false

  constructor(private readonly url: string) {}

  version(_table: WatchedTable): number | null {
    if (!this.sql && !this.stopped) this.start()
    return this.listening ? this.counter : null
  }

  /** This process committed a change of `table`: move the version now rather than when its notice arrives. */
  moved(_table: WatchedTable): void {
    this.counter++
  }

  private start(): void {
    this.sql = postgres(this.url, {
      max: 1, idle_timeout: 0, max_lifetime: null, fetch_types: false, onnotice: () => {},
      connect_timeout: PG_CONNECT_TIMEOUT_S, connection: { application_name: 'mailctl-changes' },
      onnotify: () => { this.counter++ },
      onclose: () => {
        // Notices sent while nobody listens are lost: stop vouching until listening again.
        this.listening = false
        this.counter++
        this.schedule()
      },
    } as postgres.Options<Record<string, never>>)
    this.listen()
  }

  private listen(): void {
    const sql = this.sql
    if (!sql || this.stopped) return
    sql.unsafe(`LISTEN ${CHANGE_CHANNEL}`).then(() => {
      if (this.stopped || sql !== this.sql) return
      this.counter++
      this.listening = true
    }, () => this.schedule())
  }

  private schedule(): void {
    if (this.stopped || this.retry) return
    this.retry = setTimeout(() => { this.retry = null; this.listen() }, RELISTEN_MS)
    this.retry.unref?.()
  }

  async close(): Promise<void> {
    this.stopped = true
    this.listening = false
    if (this.retry) clearTimeout(this.retry)
    const sql = this.sql
    this.sql = null
    if (sql) await sql.end({ timeout: 1 }).catch(() => {})
  }
}
