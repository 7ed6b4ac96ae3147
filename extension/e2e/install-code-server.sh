#!/usr/bin/env bash
# Installs code-server (a real VS Code) and the Node 24 it needs into a per-machine cache keyed
# by both versions. Its postinstall compiles native modules (~15 min on 2 cores), so it is paid
# once per machine: the folder is only moved into place after a complete install.
# Prints the cache folder. Needs npm, a C/C++ toolchain and Debian's libkrb5-dev.
set -euo pipefail
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
NODE_VERSION="${NODE_VERSION:-24.21.0}"
CACHE="${FLOWBABY_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flowbaby}"
DEST="$CACHE/code-server-$CODE_SERVER_VERSION-node-$NODE_VERSION"
if [ -x "$DEST/node_modules/.bin/code-server" ]; then
  echo "$DEST"
  exit 0
fi
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/.building-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
echo '{"private": true}' > package.json
npm install --no-audit --no-fund --save-exact "node@$NODE_VERSION" >&2
export PATH="$WORK/node_modules/node/bin:$PATH"
node --version >&2
npm install --no-audit --no-fund --save-exact "code-server@$CODE_SERVER_VERSION" >&2
"$WORK/node_modules/.bin/code-server" --version >&2
cd /
# The native modules hold no absolute paths, so the finished tree can move into place
# (unless a concurrent build got there first).
if [ ! -e "$DEST" ]; then
  mv -T "$WORK" "$DEST" && trap - EXIT
fi
echo "$DEST"
