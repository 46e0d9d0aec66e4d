// The enterprise grants of as.mjs: the JWT bearer grant (RFC 7523 §2.1) at the
// authorization server, taking either a workload's identity token or an
// Identity Assertion JWT Authorization Grant (ID-JAG), and a stand-in for the
// enterprise's identity provider: its RFC 8693 token exchange that turns the
// person's ID token into an ID-JAG for this authorization server.
//
// Two test issuers live in this process beside the authorization server, each
// with its own ES256 key made at start:
//   ISSUER/workload  signs workload identity tokens (POST /__test/workload_token)
//   ISSUER/idp       the identity provider: signs ID tokens (POST /__test/id_token)
//                    and ID-JAGs (POST /idp/token, the token exchange)
// The identity provider knows one client, `idp-client` / `idp-secret`
// (client_secret_basic), whose ID-JAGs name the authorization server's client
// `idJagClient` (the `id_jag_client` option; default `ent`).

import crypto from 'node:crypto';
import { errors } from 'oidc-provider';
import * as jose from 'jose';

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG_TYP = 'oauth-id-jag+jwt';
export const IDP_CLIENT = { id: 'idp-client', secret: 'idp-secret' };

async function es256() {
  const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
  return { privateKey, publicKey, kid: crypto.randomUUID() };
}

const workloadKey = await es256();
const idpKey = await es256();

export const counts = { exchange: 0, jwt_bearer: 0 };

function sign(key, issuer, claims, typ, ttl = 300) {
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', typ, kid: key.kid })
    .setIssuer(issuer)
    .setIssuedAt()
    .setJti(crypto.randomUUID())
    .setExpirationTime(`${ttl}s`)
    .sign(key.privateKey);
}

/// A workload identity token: `sub`, `aud` (default: the authorization server), `ttl` seconds.
export function workloadToken(issuer, { sub = 'workload-1', aud, ttl = 300 }) {
  return sign(workloadKey, `${issuer}/workload`, { sub, aud: aud ?? issuer }, 'JWT', ttl);
}

/// The person's ID token from the identity provider, for its client.
export function idToken(issuer, { sub = 'alice', ttl = 300 }) {
  return sign(idpKey, `${issuer}/idp`, { sub, aud: IDP_CLIENT.id }, 'JWT', ttl);
}

function oauthError(res, status, error, description) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error, error_description: description }));
}

/// POST ISSUER/idp/token: the identity provider's token exchange (an ID token for an ID-JAG).
export async function idpTokenExchange(req, res, issuer, idJagClient) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
  const basic = String(req.headers.authorization ?? '').replace(/^Basic /, '');
  const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent);
  if (id !== IDP_CLIENT.id || secret !== IDP_CLIENT.secret) {
    return oauthError(res, 401, 'invalid_client', 'unknown client or wrong secret');
  }
  if (form.get('grant_type') !== TOKEN_EXCHANGE || form.get('requested_token_type') !== ID_JAG_TYPE) {
    return oauthError(res, 400, 'unsupported_grant_type', 'only the token exchange for an ID-JAG');
  }
  if (form.get('subject_token_type') !== ID_TOKEN_TYPE) {
    return oauthError(res, 400, 'invalid_request', 'subject_token_type must be an ID token');
  }
  let person;
  try {
    ({ payload: person } = await jose.jwtVerify(form.get('subject_token') ?? '', idpKey.publicKey, {
      issuer: `${issuer}/idp`, audience: IDP_CLIENT.id, algorithms: ['ES256'],
    }));
  } catch (e) {
    return oauthError(res, 400, 'invalid_grant', `the ID token: ${e.message}`);
  }
  if (form.get('audience') !== issuer) {
    return oauthError(res, 400, 'invalid_target', 'this identity provider grants for its own authorization server only');
  }
  counts.exchange += 1;
  const claims = { sub: person.sub, aud: issuer, client_id: idJagClient };
  if (form.get('resource')) claims.resource = form.get('resource');
  if (form.get('scope')) claims.scope = form.get('scope');
  const jag = await sign(idpKey, `${issuer}/idp`, claims, ID_JAG_TYP);
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  return res.end(JSON.stringify({
    access_token: jag, issued_token_type: ID_JAG_TYPE, token_type: 'N_A', expires_in: 300, ...(claims.scope ? { scope: claims.scope } : {}),
  }));
}

/// The assertion's verified claims: an ID-JAG from the identity provider (for this client),
/// else a workload token from the workload issuer; both for this authorization server.
async function verifiedAssertion(provider, ctx, assertion) {
  let header;
  try {
    header = jose.decodeProtectedHeader(assertion);
  } catch {
    throw new errors.InvalidGrant('the assertion is not a JWT');
  }
  const jag = header.typ === ID_JAG_TYP;
  const [key, issuer] = jag ? [idpKey, `${provider.issuer}/idp`] : [workloadKey, `${provider.issuer}/workload`];
  let payload;
  try {
    ({ payload } = await jose.jwtVerify(assertion, key.publicKey, {
      issuer, audience: provider.issuer, algorithms: ['ES256'], requiredClaims: ['sub', 'exp'],
    }));
  } catch (e) {
    throw new errors.InvalidGrant(`the assertion: ${e.message}`);
  }
  if (jag && payload.client_id !== ctx.oidc.client.clientId) {
    throw new errors.InvalidGrant('the ID-JAG was issued for another client');
  }
  return { payload, jag };
}

/// Registers the JWT bearer grant on `provider`; `resourceInfo(resource)` is what
/// resourceIndicators.getResourceServerInfo answers for it.
export function registerJwtBearer(provider, resourceInfo) {
  async function jwtBearer(ctx) {
    const { params, client } = ctx.oidc;
    const { payload, jag } = await verifiedAssertion(provider, ctx, String(params.assertion ?? ''));
    const resource = params.resource ?? payload.resource;
    if (!resource) throw new errors.InvalidTarget('a resource is required');
    if (jag && payload.resource && payload.resource !== resource) {
      throw new errors.InvalidTarget('the ID-JAG was issued for another resource');
    }
    const info = resourceInfo(resource);
    const allowed = new Set(info.scope.split(' '));
    let asked = String(params.scope ?? '').split(' ').filter(Boolean);
    if (jag && payload.scope) {
      const granted = new Set(String(payload.scope).split(' '));
      asked = asked.length ? asked.filter((s) => granted.has(s)) : [...granted];
    }
    const refused = asked.filter((s) => !allowed.has(s));
    if (refused.length) throw new errors.InvalidScope(`scope refused: ${refused.join(' ')}`, refused.join(' '));
    counts.jwt_bearer += 1;
    const at = new provider.AccessToken({ accountId: payload.sub, client, gty: 'jwt_bearer' });
    at.resourceServer = new provider.ResourceServer(resource, info);
    at.scope = asked.join(' ') || undefined;
    ctx.body = {
      access_token: await at.save(), token_type: 'Bearer', expires_in: at.expiration, ...(at.scope ? { scope: at.scope } : {}),
    };
  }
  provider.registerGrantType(JWT_BEARER, jwtBearer, ['assertion', 'scope', 'resource']);
}
