#!/usr/bin/env bash
# The test command named in the README: format, vet, race-enabled tests.
set -euo pipefail
cd "$(dirname "$0")"
# The compatibility tests run real npm MCP servers pinned in package-lock.json;
# an install older than the lock file (npm records it in
# node_modules/.package-lock.json) is redone.
if [ -f package-lock.json ] && { [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm ci --no-audit --no-fund
fi
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go test -race -count=1 -timeout 30m ./...
# The framework adapters and the OpenTelemetry module are modules of their
# own (the core pulls no framework); each is vetted and tested the same way.
for d in adapters/*/ otel/; do
  [ -f "$d/go.mod" ] || continue
  echo "== $d"
  (cd "$d" && go vet ./... && go test -race -count=1 -timeout 20m ./...)
done
