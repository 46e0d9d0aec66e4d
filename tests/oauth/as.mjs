// A real, strict OAuth 2.1 / OpenID authorization server for conduit-mcp's tests:
// oidc-provider (pinned in package-lock.json) on 127.0.0.1, with a headless
// login-and-consent step and a few test-only controls under /__test/.
//
// Started by the `conduit-mcp-test-oauth` crate (see its docs); by hand:
//   node as.mjs '{"port":0}'
// prints one JSON line on stdout once listening: {"issuer":"http://127.0.0.1:PORT","port":PORT}
//
// Configuration (one JSON argument; every key optional):
//   port            0 picks a free port
//   alg             "ES256" (default) or "RS256": the signing keys' algorithm
//   account         the account a login signs in as when the request has no login_hint (default "alice")
//   scopes          resource scopes the AS knows (default mcp:read mcp:write mcp:deploy mcp:admin)
//   refused_scopes  scopes whose request is refused with invalid_scope (default ["mcp:refused"])
//   access_token_ttl seconds (default 600)
//   slow_ms         how long a "slow" fault holds a request (default 30000)
//   clients         extra static clients (oidc-provider client metadata), added to the built-in ones
//   dpop_nonce      true: every DPoP proof at the token endpoint must carry this AS's nonce (RFC 9449 §8)
//   id_jag_client   the client of this AS that the identity provider's ID-JAGs name (default "ent")
//
// The enterprise grants (enterprise.mjs): the JWT bearer grant at /token takes a workload
// token of ISSUER/workload or an ID-JAG of ISSUER/idp; POST /idp/token is the identity
// provider's token exchange (client idp-client / idp-secret, Basic).
//
// Test controls (JSON bodies, loopback only like everything here):
//   POST /__test/resource {resource, format:"jwt"|"opaque", scopes:[..], ttl}  per-resource settings
//   POST /__test/rotate   {keep_old:bool}   a new signing key, published first; returns {kid, kids}
//   POST /__test/mint     {claims, key:"current"|"previous"|"unknown"|"none"|"hs256"}  a JWT with any claims
//   POST /__test/faults   {jwks, metadata, introspection}: "ok" | "down" | "slow" | "garbage" | "wrong_issuer"
//   POST /__test/workload_token {sub, aud, ttl}  a workload identity token of ISSUER/workload
//   POST /__test/id_token {sub, ttl}  the person's ID token from ISSUER/idp (for idp-client)
//   GET  /__test/stats    {jwks, metadata, introspection, token, exchange, jwt_bearer}: requests served
//                         per endpoint family; ID-JAGs issued; JWT bearer grants that issued a token
//   POST /__test/stats/reset

import crypto from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';
import { counts, idToken, idpTokenExchange, registerJwtBearer, workloadToken } from './enterprise.mjs';

const config = JSON.parse(process.argv[2] ?? '{}');
const alg = config.alg ?? 'ES256';
const defaultAccount = config.account ?? 'alice';
const resourceScopes = config.scopes ?? ['mcp:read', 'mcp:write', 'mcp:deploy', 'mcp:admin'];
const refusedScopes = new Set(config.refused_scopes ?? ['mcp:refused']);
const accessTokenTtl = config.access_token_ttl ?? 600;
const slowMs = config.slow_ms ?? 30_000;

// Per-resource settings set by tests; anything else gets a JWT with every known scope.
const resources = new Map();
// Signing keys, newest first: the first one signs.
let keys = [];
let previousKey;
let faults = { jwks: 'ok', metadata: 'ok', introspection: 'ok' };
let stats = { jwks: 0, metadata: 0, introspection: 0, token: 0 };
let kidCounter = 0;

async function newKey() {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  kidCounter += 1;
  jwk.kid = `k${kidCounter}-${Date.now().toString(36)}`;
  jwk.alg = alg;
  jwk.use = 'sig';
  return { jwk, privateKey, publicKey };
}

const builtInClients = [
  // The resource server's own credentials, for RFC 7662 introspection.
  { client_id: 'rs', client_secret: 'rs-secret', grant_types: ['client_credentials'], response_types: [], redirect_uris: [] },
  // A machine client (client_credentials).
  {
    client_id: 'svc', client_secret: 'svc-secret', grant_types: ['client_credentials'], response_types: [],
    redirect_uris: [], scope: resourceScopes.join(' '),
  },
  // A public native app: any loopback port on its redirect URI (RFC 8252).
  {
    client_id: 'app', token_endpoint_auth_method: 'none', application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback', 'http://localhost/callback'],
  },
  // A confidential app (client_secret_basic).
  {
    client_id: 'web', client_secret: 'web-secret', application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    redirect_uris: ['http://127.0.0.1/callback', 'http://localhost/callback'],
  },
];

function configuration() {
  return {
    clients: [...builtInClients, ...(config.clients ?? [])],
    clientDefaults: { id_token_signed_response_alg: alg },
    jwks: { keys: keys.map((k) => k.jwk) },
    cookies: { keys: ['conduit-mcp-test-cookie-key'] },
    scopes: ['openid', 'offline_access', ...resourceScopes],
    pkce: { required: () => true },
    ttl: {
      AccessToken: accessTokenTtl,
      ClientCredentials: accessTokenTtl,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 86_400,
    },
    // A refresh token for every client allowed the grant (oidc-provider keeps
    // offline_access for prompt=consent requests only, which MCP clients don't send).
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      // DPoP is on (oidc-provider's default); with dpop_nonce, proofs need the AS's nonce.
      dPoP: config.dpop_nonce
        ? { enabled: true, nonceSecret: crypto.randomBytes(32), requireNonce: () => true }
        : { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => resourceInfo(resource),
      },
    },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  };
}

// What the AS says of a resource indicator (its resource server settings).
function resourceInfo(resource) {
  const settings = resources.get(resource) ?? {};
  return {
    scope: (settings.scopes ?? resourceScopes).join(' '),
    audience: resource,
    accessTokenTTL: settings.ttl ?? accessTokenTtl,
    accessTokenFormat: settings.format ?? 'jwt',
    jwt: { sign: { alg } },
  };
}

let provider;
let handler;

function build(issuer) {
  provider = new Provider(issuer, configuration());
  provider.proxy = false;
  registerJwtBearer(provider, resourceInfo);
  handler = provider.callback();
}

// Login and consent without a page: sign in as login_hint (or the default
// account) and grant what the client asked for, except the refused scopes.
async function interaction(req, res) {
  const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  const asked = String(params.scope ?? '').split(' ').filter(Boolean);
  const refused = asked.filter((s) => refusedScopes.has(s));
  if (refused.length > 0) {
    const result = { error: 'invalid_scope', error_description: `scope refused: ${refused.join(' ')}` };
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    return;
  }
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: String(params.login_hint || defaultAccount) } };
  } else {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: String(params.client_id) });
    const { details } = prompt;
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

function family(path) {
  if (path === '/jwks') return 'jwks';
  if (path.startsWith('/.well-known/')) return 'metadata';
  if (path === '/token/introspection') return 'introspection';
  if (path === '/token') return 'token';
  return undefined;
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

function send(res, status, body, type = 'application/json') {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function b64url(value) {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}

async function mint({ claims = {}, key = 'current', header = {} }) {
  if (key === 'none') {
    return `${b64url({ alg: 'none', typ: 'at+jwt', ...header })}.${b64url(claims)}.`;
  }
  if (key === 'hs256') {
    // The classic confusion: the public key's PEM used as an HMAC secret, under the real kid.
    const secret = new TextEncoder().encode(await jose.exportSPKI(keys[0].publicKey));
    return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: keys[0].jwk.kid, ...header }).sign(secret);
  }
  const signer = { current: keys[0], previous: previousKey, unknown: await newKey() }[key];
  if (!signer) throw new Error(`no ${key} key`);
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg, typ: 'at+jwt', kid: signer.jwk.kid, ...header })
    .sign(signer.privateKey);
}

async function control(req, res, path) {
  if (path === '/__test/stats' && req.method === 'GET') return send(res, 200, { ...stats, ...counts });
  if (req.method !== 'POST') return send(res, 405, { error: 'POST' });
  const body = await readJson(req);
  switch (path) {
    case '/__test/stats/reset':
      stats = { jwks: 0, metadata: 0, introspection: 0, token: 0 };
      Object.assign(counts, { exchange: 0, jwt_bearer: 0 });
      return send(res, 200, stats);
    case '/__test/resource':
      resources.set(body.resource, body);
      return send(res, 200, { ok: true });
    case '/__test/rotate': {
      const fresh = await newKey();
      [previousKey] = keys;
      keys = body.keep_old ? [fresh, ...keys] : [fresh];
      build(provider.issuer);
      return send(res, 200, { kid: fresh.jwk.kid, kids: keys.map((k) => k.jwk.kid) });
    }
    case '/__test/mint':
      return send(res, 200, { token: await mint(body) });
    case '/__test/workload_token':
      return send(res, 200, { token: await workloadToken(provider.issuer, body) });
    case '/__test/id_token':
      return send(res, 200, { token: await idToken(provider.issuer, body) });
    case '/__test/faults':
      faults = { ...faults, ...body };
      return send(res, 200, faults);
    default:
      return send(res, 404, { error: 'unknown control' });
  }
}

// A fault on an endpoint family, or undefined to serve it normally.
async function faulted(req, res, kind) {
  const mode = faults[kind] ?? 'ok';
  if (mode === 'ok' || req.headers['x-test-passthrough']) return false;
  if (mode === 'down') {
    send(res, 503, { error: 'temporarily_unavailable' });
  } else if (mode === 'slow') {
    setTimeout(() => send(res, 503, { error: 'temporarily_unavailable' }), slowMs);
  } else if (mode === 'garbage') {
    send(res, 200, '{"keys": [ not json', 'application/json');
  } else if (mode === 'wrong_issuer') {
    const own = await fetch(`${provider.issuer}${req.url}`, { headers: { 'x-test-passthrough': '1' } });
    const doc = await own.json();
    send(res, own.status, { ...doc, issuer: 'https://wrong-issuer.invalid' });
  } else {
    return false;
  }
  return true;
}

const server = http.createServer(async (req, res) => {
  try {
    const path = new URL(req.url, 'http://x').pathname;
    if (path.startsWith('/__test/')) return await control(req, res, path);
    if (path === '/idp/token' && req.method === 'POST') {
      return await idpTokenExchange(req, res, provider.issuer, config.id_jag_client ?? 'ent');
    }
    const kind = family(path);
    if (kind && !req.headers['x-test-passthrough']) stats[kind] += 1;
    if (kind && (await faulted(req, res, kind))) return undefined;
    if (path.startsWith('/interaction/')) return await interaction(req, res);
    return handler(req, res);
  } catch (e) {
    process.stderr.write(`as.mjs: ${e?.stack ?? e}\n`);
    if (!res.headersSent) send(res, 500, { error: 'server_error', error_description: String(e?.message ?? e) });
    return undefined;
  }
});

keys = [await newKey()];
server.listen(config.port ?? 0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  build(issuer);
  process.stdout.write(`${JSON.stringify({ issuer, port })}\n`);
});

// Stop with the parent: a closed stdin means the test process is gone.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));

