#!/bin/sh
# One-command install of mailctl on a VPS (Debian, Ubuntu or any systemd distribution), as root:
#
#   MAILCTL_BINARY=./dist/mailctl sh scripts/install.sh
#
# - MAILCTL_BINARY: the executable to install, a path or an http(s) URL (default: dist/mailctl beside
#   this script's repository, built by `npm run build`).
# - MAILCTL_INSTALL_ROOT: where to install (default /). Any other root is a scratch install: files are
#   written under it and no user is created, nothing is chown'ed, systemctl is not called (tests).
# - MAILCTL_HOSTNAME: the server's fully qualified name (default: `hostname -f`).
#
# Idempotent: the binary and the unit are replaced, the configuration file is written only if absent,
# the user and the data dir are created only if missing.
set -eu

ROOT="${MAILCTL_INSTALL_ROOT:-/}"
ROOT="${ROOT%/}"
HERE="$(cd "$(dirname "$0")" && pwd)"
BINARY="${MAILCTL_BINARY:-$HERE/../dist/mailctl}"
HOST="${MAILCTL_HOSTNAME:-$(hostname -f 2>/dev/null || hostname)}"
SCRATCH=0
[ -n "$ROOT" ] && SCRATCH=1

say() { printf '%s\n' "$*"; }
fail() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

if [ "$SCRATCH" = 0 ] && [ "$(id -u)" != 0 ]; then
  fail "run as root (or set MAILCTL_INSTALL_ROOT to install into a scratch folder)"
fi

BIN_DIR="$ROOT/usr/local/bin"
ETC_DIR="$ROOT/etc/mailctl"
DATA_DIR="$ROOT/var/lib/mailctl"
UNIT_DIR="$ROOT/etc/systemd/system"
mkdir -p "$BIN_DIR" "$ETC_DIR" "$DATA_DIR" "$UNIT_DIR"

# 1. The binary.
case "$BINARY" in
  http://*|https://*)
    tmp="$BIN_DIR/.mailctl.download.$$"
    if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$tmp" "$BINARY" || fail "cannot download $BINARY"
    elif command -v wget >/dev/null 2>&1; then wget -q -O "$tmp" "$BINARY" || fail "cannot download $BINARY"
    else fail "neither curl nor wget is installed to download $BINARY"; fi
    chmod 0755 "$tmp"
    mv -f "$tmp" "$BIN_DIR/mailctl"
    ;;
  *)
    [ -f "$BINARY" ] || fail "MAILCTL_BINARY: no file at $BINARY (build it with \`npm run build\`, or give a path or URL)"
    cp -f "$BINARY" "$BIN_DIR/.mailctl.new.$$"
    chmod 0755 "$BIN_DIR/.mailctl.new.$$"
    mv -f "$BIN_DIR/.mailctl.new.$$" "$BIN_DIR/mailctl"
    ;;
esac
say "installed $BIN_DIR/mailctl"

# 2. The system user and the data dir.
if [ "$SCRATCH" = 0 ]; then
  if ! id mailctl >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/mailctl --shell /usr/sbin/nologin mailctl
    say "created the system user mailctl"
  fi
  chown mailctl:mailctl "$DATA_DIR"
  chmod 0750 "$DATA_DIR"
fi

# 3. The configuration, only if absent (the operator's edits are kept).
CONF="$ETC_DIR/mailctl.toml"
if [ ! -f "$CONF" ]; then
  cat > "$CONF" <<CONF
# mailctl settings (README.md, Configuration): each key is also an environment variable.
MAILCTL_DATA_DIR = "/var/lib/mailctl"
MAILCTL_HOSTNAME = "$HOST"
MAILCTL_PUBLIC_URL = "http://$HOST:3000"
MAILCTL_HTTP_PORT = 3000
MAILCTL_SMTP_INBOUND_PORT = 25
MAILCTL_SMTP_RELAY_PORT = 587
# Several nodes: DATABASE_URL = "postgres://...", REDIS_URL = "redis://...", MAILCTL_SECRET = "<openssl rand -base64 32>"
CONF
  chmod 0640 "$CONF"
  [ "$SCRATCH" = 0 ] && chown root:mailctl "$CONF"
  say "wrote $CONF"
else
  say "kept $CONF"
fi

# 4. The systemd unit.
cat > "$UNIT_DIR/mailctl.service" <<'UNIT'
[Unit]
Description=mailctl (self-hosted email platform)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=mailctl
Group=mailctl
ExecStart=/usr/local/bin/mailctl serve --config /etc/mailctl/mailctl.toml
WorkingDirectory=/var/lib/mailctl
# Ports 25 and 587 without root.
AmbientCapabilities=CAP_NET_BIND_SERVICE
CapabilityBoundingSet=CAP_NET_BIND_SERVICE
NoNewPrivileges=true
ProtectSystem=strict
ProtectHome=true
PrivateTmp=true
PrivateDevices=true
ReadWritePaths=/var/lib/mailctl
# SIGTERM: mailctl finishes what is on the wire within MAILCTL_SHUTDOWN_GRACE_SECONDS (10 s) and exits 0.
KillSignal=SIGTERM
TimeoutStopSec=30
Restart=on-failure
RestartSec=2
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
UNIT
say "wrote $UNIT_DIR/mailctl.service"

# 5. Enable and start (a real install only).
if [ "$SCRATCH" = 0 ]; then
  systemctl daemon-reload
  systemctl enable --now mailctl.service
  say "mailctl is enabled and started (journalctl -u mailctl -f)"
else
  say "scratch root $ROOT: systemctl and useradd skipped"
fi

IP="$( (hostname -I 2>/dev/null || true) | awk '{print $1}')"
[ -n "$IP" ] || IP="<this server's public IP>"
cat <<NEXT

Next steps:
  mailctl user create --email you@example.com
  mailctl project create --name shop --json
  mailctl domain add shop example.com        (prints the DNS records of the sending domain)

DNS records of this server ($HOST):
  $HOST.  A    $IP
  $IP     PTR  $HOST.       (reverse DNS: set it at your hosting provider)
  $HOST.  TXT  "v=spf1 a -all"
Open ports 25 (inbound bounces), 587 (submission) and 3000 (API) in the firewall.
NEXT
