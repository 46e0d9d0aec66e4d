#!/usr/bin/env bash
# Installs the test authorization server: oidc-provider and jose, pinned by
# tests/oauth/package-lock.json, into tests/oauth/node_modules with Node 22's
# npm (npx fetches Node 22 from the registry once). The conduit-mcp-test-oauth
# crate starts tests/oauth/as.mjs from there; it also installs on first use,
# so running this ahead of `cargo test` only moves the wait.
#
#   scripts/oauth_as.sh
#
# Needs: npx (Node.js and npm of any version). Exit status: 0 when installed.
set -euo pipefail
source "$(dirname "$0")/lib/repo.sh"
cd tests/oauth
if ! command -v npx >/dev/null 2>&1; then
  log "npx is required (install Node.js and npm)"
  exit 1
fi
npx -y -p node@22 -- npm ci --no-audit --no-fund --loglevel=error
echo "oauth_as.sh: oidc-provider $(npx -y -p node@22 -- node -p 'require("./node_modules/oidc-provider/package.json").version') installed on Node $(npx -y -p node@22 -- node --version)"
