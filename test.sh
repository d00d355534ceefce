#!/usr/bin/env bash
# The test command named in the README: format, vet, race-enabled tests.
set -euo pipefail
cd "$(dirname "$0")"
# The compatibility tests run real npm MCP servers pinned in package-lock.json.
if [ -f package-lock.json ] && [ ! -d node_modules/@modelcontextprotocol ]; then
  npm ci --no-audit --no-fund
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 30m ./...
