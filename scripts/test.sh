#!/usr/bin/env bash
# The test command: typecheck, lint, unit/integration tests (vitest), then the browser e2e suite.
# Prints one plain summary line "N passed, N failed" from vitest's JSON reports and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export NO_COLOR=1 FORCE_COLOR=0
out=.ci-out
mkdir -p "$out"
rm -f "$out"/*.json
status=0

echo "== node $(node --version)"
echo "== typecheck"
npx tsc -p tsconfig.json --noEmit || status=1
npx tsc -p tsconfig.web.json --noEmit || status=1
echo "== lint"
npx eslint --max-warnings 0 . || status=1

echo "== unit and integration tests"
npx vitest run --reporter=default --reporter=json --outputFile.json="$out/unit.json" || status=1

if [ -f e2e/vitest.config.ts ]; then
  echo "== e2e (renderer in Chromium against rein serve)"
  npx vitest run --config e2e/vitest.config.ts --reporter=default --reporter=json --outputFile.json="$out/e2e.json" || status=1
fi

figures="$out/reliability-figures.txt"
if [ -f e2e/reliability/vitest.config.ts ]; then
  echo "== reliability (faults, hostile input and load against the real server)"
  rm -f "$figures"
  REIN_FIGURES_FILE="$PWD/$figures" npx vitest run --config e2e/reliability/vitest.config.ts --passWithNoTests --reporter=default --reporter=json --outputFile.json="$out/reliability.json" || status=1
fi

if [ -f e2e/agents/vitest.config.ts ]; then
  echo "== e2e agents (real Claude Code, Codex and OpenClaw, offline in network namespaces)"
  # The clients are installed apart from the app, in e2e/node_modules (its own lockfile).
  if [ -f e2e/package-lock.json ]; then npm ci --prefix e2e --no-audit --no-fund || status=1; else npm install --prefix e2e --no-audit --no-fund || status=1; fi
  npx vitest run --config e2e/agents/vitest.config.ts --reporter=default --reporter=json --outputFile.json="$out/agents.json" || status=1
fi

if [ -f "$figures" ]; then
  echo "== reliability figures (the bench sizes are in docs/reliability-and-security.md)"
  cat "$figures"
fi
node scripts/summarize-tests.mjs "$out"/*.json || status=1
exit $status
