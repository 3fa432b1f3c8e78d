import { afterAll, expect, test } from 'bun:test'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

/**
 * scripts/install.sh into a scratch MAILCTL_INSTALL_ROOT (issue 14): no root needed, no network, and
 * neither useradd nor systemctl called (stand-ins on PATH record any call). The unit passes
 * `systemd-analyze verify`, the install is idempotent and keeps an edited configuration.
 */

const SCRIPT = resolve(import.meta.dir, '../../scripts/install.sh')
const dir = mkdtempSync(join(tmpdir(), 'mailctl-install-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Stand-ins for the tools a scratch install must not call: each records its name and fails. */
const fakeBin = join(dir, 'bin')
mkdirSync(fakeBin)
const calls = join(dir, 'calls.log')
for (const tool of ['useradd', 'systemctl', 'chown', 'curl', 'wget']) {
  writeFileSync(join(fakeBin, tool), `#!/bin/sh\necho ${tool} "$@" >> '${calls}'\nexit 1\n`)
  chmodSync(join(fakeBin, tool), 0o755)
}
const binary = join(dir, 'mailctl-build')
writeFileSync(binary, '#!/bin/sh\necho "mailctl stand-in"\n')

function install(root: string, extra: Record<string, string> = {}) {
  const p = Bun.spawnSync(['sh', SCRIPT], {
    env: { PATH: `${fakeBin}:${process.env.PATH}`, MAILCTL_INSTALL_ROOT: root, MAILCTL_BINARY: binary, MAILCTL_HOSTNAME: 'mail.example.com', ...extra },
    stdout: 'pipe', stderr: 'pipe',
  })
  return { code: p.exitCode, stdout: p.stdout.toString(), stderr: p.stderr.toString() }
}

test('installs the binary, the configuration and the unit into the scratch root; idempotent; next steps printed', () => {
  const root = join(dir, 'root')
  const r = install(root)
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  const bin = join(root, 'usr/local/bin/mailctl')
  expect(readFileSync(bin, 'utf8')).toBe(readFileSync(binary, 'utf8'))
  expect(statSync(bin).mode & 0o111).toBe(0o111)
  expect(existsSync(join(root, 'var/lib/mailctl'))).toBe(true)
  const conf = readFileSync(join(root, 'etc/mailctl/mailctl.toml'), 'utf8')
  expect(conf).toContain('MAILCTL_HOSTNAME = "mail.example.com"')
  expect(conf).toContain('MAILCTL_DATA_DIR = "/var/lib/mailctl"')
  const unit = readFileSync(join(root, 'etc/systemd/system/mailctl.service'), 'utf8')
  for (const line of ['ExecStart=/usr/local/bin/mailctl serve --config /etc/mailctl/mailctl.toml', 'User=mailctl', 'AmbientCapabilities=CAP_NET_BIND_SERVICE', 'NoNewPrivileges=true', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/mailctl', 'Restart=on-failure']) {
    expect(unit.split('\n')).toContain(line)
  }
  expect(r.stdout).toContain('mailctl user create')
  expect(r.stdout).toContain('mailctl project create')
  expect(r.stdout).toContain('mailctl domain add')
  expect(r.stdout).toContain('mail.example.com.  TXT  "v=spf1 a -all"')
  expect(r.stdout).toContain('PTR  mail.example.com.')

  // Again, after the operator edited the configuration: kept; the binary is replaced.
  appendFileSync(join(root, 'etc/mailctl/mailctl.toml'), 'MAILCTL_LOG_LEVEL = "debug"\n')
  writeFileSync(binary, '#!/bin/sh\necho "mailctl stand-in v2"\n')
  const again = install(root)
  expect(again.code).toBe(0)
  expect(readFileSync(join(root, 'etc/mailctl/mailctl.toml'), 'utf8')).toContain('MAILCTL_LOG_LEVEL = "debug"')
  expect(readFileSync(bin, 'utf8')).toContain('v2')
  // No user, no chown, no systemctl, no download.
  expect(existsSync(calls)).toBe(false)
})

const analyze = Bun.which('systemd-analyze')
test.skipIf(!analyze && !process.env.CI)('systemd-analyze verify accepts the unit (and refuses it when its binary is missing)', () => {
  const root = join(dir, 'verify')
  expect(install(root).code).toBe(0)
  // The scratch root needs the system's own units (targets the unit refers to).
  mkdirSync(join(root, 'usr/lib/systemd'), { recursive: true })
  cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true })
  const verify = () => Bun.spawnSync([analyze ?? 'systemd-analyze', 'verify', `--root=${root}`, 'mailctl.service'], { stdout: 'pipe', stderr: 'pipe' })
  const ok = verify()
  expect(ok.stderr.toString()).toBe('')
  expect(ok.exitCode).toBe(0)
  rmSync(join(root, 'usr/local/bin/mailctl'))
  const bad = verify()
  expect(bad.exitCode).not.toBe(0)
  expect(bad.stderr.toString()).toContain('/usr/local/bin/mailctl')
})

test('a missing binary stops the install with a message naming MAILCTL_BINARY', () => {
  const r = install(join(dir, 'missing'), { MAILCTL_BINARY: join(dir, 'no-such-file') })
  expect(r.code).toBe(1)
  expect(r.stderr).toContain('MAILCTL_BINARY: no file at')
})
