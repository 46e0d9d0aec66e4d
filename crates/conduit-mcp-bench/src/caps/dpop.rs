//! W1 with DPoP-bound tokens against W1 with bearer tokens (issue 31).
//!
//! `bench-as` (a loopback authorization server: metadata, JWKS) mints a bearer
//! token and the same token bound by `cnf.jkt` to a second key it hands the
//! bench; the bench server is an OAuth resource server taking DPoP
//! (`--oauth-dpop`), started fresh for each measurement. The load generator
//! sends W1 with `Authorization: Bearer` or with `Authorization: DPoP` and a
//! proof it signs fresh for every request (ES256: its own `jti`, `iat` now,
//! `htm`, `htu`, `ath`; ring's ECDSA), so the client's signing is inside the
//! measurement too.

use super::Sizes;
use super::server::{Node, request_with};
use crate::child::Listening;
use crate::load::{self, Load};
use crate::wire;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The resource the tokens are for, and the `htu` of every proof.
const RESOURCE: &str = "http://127.0.0.1/bench/mcp";

/// What bench-as handed out.
pub(super) struct Issued {
    _as: Listening,
    /// Its issuer URL.
    issuer: String,
    /// The bearer token.
    bearer: String,
    /// The DPoP-bound token.
    bound: String,
    /// The proof key.
    signer: Arc<ProofSigner>,
}

/// Signs DPoP proofs with one P-256 key (ring's ECDSA: the proof's JWS
/// signature is the fixed-width `r || s` ring makes).
pub(super) struct ProofSigner {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    /// The proof header, base64url, then `.`.
    header: String,
    ath: String,
    /// Makes every `jti` of this signer distinct from other signers'.
    run: u64,
    /// Proofs signed so far: every `jti` is new (request numbers restart with each load run).
    signed: AtomicU64,
}

impl ProofSigner {
    /// The signer of `pkcs8` (a P-256 key), for requests presenting `token`.
    fn new(pkcs8: &[u8], token: &str) -> Result<Self, String> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|e| format!("the DPoP key: {e}"))?;
        let point = pair.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": jwk });
        let header = format!("{}.", URL_SAFE_NO_PAD.encode(header.to_string()));
        let ath = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, token.as_bytes()));
        Ok(Self { pair, rng, header, ath, run: rand::random::<u64>(), signed: AtomicU64::new(0) })
    }

    /// A new proof: `POST` to [`RESOURCE`], now, a `jti` never used before.
    pub(super) fn proof(&self) -> String {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let n = self.signed.fetch_add(1, Ordering::Relaxed);
        let claims = json!({
            "jti": format!("{:x}-{n}", self.run), "htm": "POST", "htu": RESOURCE, "iat": now, "ath": self.ath,
        });
        let mut jws = self.header.clone();
        jws.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let Ok(sig) = self.pair.sign(&self.rng, jws.as_bytes()) else { return String::new() };
        jws.push('.');
        jws.push_str(&URL_SAFE_NO_PAD.encode(sig.as_ref()));
        jws
    }
}

/// Starts bench-as and reads its two tokens and the proof key.
pub(super) fn issue(bench_as: &Path) -> Result<Issued, String> {
    let mut cmd = Command::new(bench_as);
    cmd.args(["--resource", RESOURCE, "--scope", "mcp:read"]).stdout(Stdio::piped());
    let mut server = Listening::spawn_keeping_stdout(cmd, "bench-as", Duration::from_secs(20))?;
    let stdout = server.child.stdout.take().ok_or("bench-as: no stdout")?;
    let (mut bearer, mut key, mut bound) = (None, None, None);
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some(t) = line.strip_prefix("token ") {
            bearer = Some(t.to_owned());
        } else if let Some(k) = line.strip_prefix("dpop-key ") {
            key = Some(URL_SAFE_NO_PAD.decode(k).map_err(|e| format!("bench-as printed a bad key: {e}"))?);
        } else if let Some(t) = line.strip_prefix("dpop-token ") {
            bound = Some(t.to_owned());
            break;
        }
    }
    let (Some(bearer), Some(key), Some(bound)) = (bearer, key, bound) else {
        return Err(format!("bench-as did not print its tokens: {}", server.tail()));
    };
    let signer = Arc::new(ProofSigner::new(&key, &bound)?);
    Ok(Issued { issuer: format!("http://{}", server.addr), _as: server, bearer, bound, signer })
}

/// One W1 measurement.
#[derive(Debug, Clone)]
pub struct DpopSample {
    /// DPoP-bound tokens (else bearer).
    pub dpop: bool,
    /// The round (0-based).
    pub round: usize,
    /// Responses.
    pub requests: u64,
    /// Of them, failures.
    pub errors: u64,
    /// The first failure.
    pub first_error: Option<String>,
    /// Requests per second.
    pub rps: f64,
}

impl DpopSample {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "dpop W1 {:<6} round {} {:.0} requests/s ({} requests, {} errors {})",
            if self.dpop { "dpop" } else { "bearer" },
            self.round + 1,
            self.rps,
            self.requests,
            self.errors,
            self.first_error.as_deref().unwrap_or("")
        )
    }
}

fn node(server: &Path, issued: &Issued) -> Result<Node, String> {
    let args = ["--oauth-issuer", issued.issuer.as_str(), "--oauth-resource", RESOURCE, "--oauth-dpop"];
    Node::start(server, &args.map(str::to_owned))
}

/// The W1 request builder with the bearer token, or the bound token and a fresh proof.
fn builder(host: String, issued: &Issued, dpop: bool) -> load::Builder {
    if dpop {
        let (token, signer) = (format!("Authorization: DPoP {}", issued.bound), issued.signer.clone());
        Arc::new(move |n, out| {
            let proof = format!("DPoP: {}", signer.proof());
            request_with(out, &host, &wire::greet(n), &[&token, &proof]);
        })
    } else {
        let token = format!("Authorization: Bearer {}", issued.bearer);
        Arc::new(move |n, out| request_with(out, &host, &wire::greet(n), &[&token]))
    }
}

/// Checks that the server holds the binding: the bound token without its proof is refused.
pub(super) async fn binding_checked(server: &Path, issued: &Issued) -> Result<(), String> {
    let node = node(server, issued)?;
    let mut req = Vec::new();
    request_with(&mut req, &node.host(), &wire::greet(1), &[&format!("Authorization: Bearer {}", issued.bound)]);
    let mut c = crate::client::Conn::connect(node.addr).await.map_err(|e| e.to_string())?;
    match c.roundtrip(&req).await.map_err(|e| e.to_string())? {
        401 => Ok(()),
        s => Err(format!("the DPoP-bound token without a proof was answered {s}, not 401")),
    }
}

/// What one proof costs on one core, apart from the HTTP request it rides on.
#[derive(Debug, Clone, Copy)]
pub struct DpopFloor {
    /// Proofs measured.
    pub proofs: usize,
    /// Signing one (the load generator's side: ring ES256), µs.
    pub sign_us: f64,
    /// ring's ES256 verify of one alone (the signature, nothing else), µs.
    pub verify_us: f64,
    /// The resource server's whole check of one (`DpopVerifier::check` and `admit`), µs.
    pub check_us: f64,
}

impl DpopFloor {
    /// One log line.
    pub fn line(&self) -> String {
        format!(
            "dpop floor: signing a proof {:.1} µs, verifying its signature {:.1} µs, the server's whole check of it \
             {:.1} µs ({} proofs, one thread)",
            self.sign_us, self.verify_us, self.check_us, self.proofs
        )
    }
}

/// Signs `n` proofs and checks each with the resource server's verifier, in this
/// thread: the CPU one DPoP request adds on this machine whatever the HTTP layer does.
pub(super) async fn floor(issued: &Issued, n: usize) -> Result<DpopFloor, String> {
    use conduit_mcp::auth::oauth::{DpopConfig, DpopVerifier, ProofRequest};
    let n = n.max(1);
    let started = std::time::Instant::now();
    let proofs: Vec<String> = (0..n).map(|_| issued.signer.proof()).collect();
    let sign_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_FIXED,
        issued.signer.pair.public_key().as_ref().to_vec(),
    );
    let signed: Vec<(&str, Vec<u8>)> = proofs
        .iter()
        .filter_map(|p| p.rsplit_once('.'))
        .map(|(input, sig)| (input, URL_SAFE_NO_PAD.decode(sig).unwrap_or_default()))
        .collect();
    let started = std::time::Instant::now();
    for (input, sig) in &signed {
        public.verify(input.as_bytes(), sig).map_err(|_| "a proof the bench signed does not verify".to_owned())?;
    }
    let verify_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let verifier = DpopVerifier::new(DpopConfig::default())?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let req = ProofRequest { method: "POST", url: RESOURCE, access_token: Some(&issued.bound), now_ms };
    let started = std::time::Instant::now();
    for proof in &proofs {
        let checked = verifier.check(proof, &req).map_err(|e| e.to_string())?;
        verifier.admit(&checked, now_ms).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    }
    let check_us = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    Ok(DpopFloor { proofs: n, sign_us, verify_us, check_us })
}

/// W1 on a fresh OAuth bench server, bearer or DPoP.
pub(super) async fn w1(
    server: &Path,
    issued: &Issued,
    dpop: bool,
    z: &Sizes,
    round: usize,
) -> Result<DpopSample, String> {
    let node = node(server, issued)?;
    let build = builder(node.host(), issued, dpop);
    let base = Load {
        addr: node.addr,
        conns: z.conns,
        duration: Some(Duration::from_millis(z.warmup_ms)),
        max_requests: None,
        expect: b"Hello, bench-",
        collect_ids: false,
        pace: None,
    };
    load::run(&base, build.clone()).await.map_err(|e| e.to_string())?;
    let measured = Load { duration: Some(Duration::from_millis(z.measure_ms)), ..base };
    let r = load::run(&measured, build).await.map_err(|e| e.to_string())?;
    Ok(DpopSample {
        dpop,
        round,
        requests: r.requests,
        errors: r.errors,
        first_error: r.first_error.clone(),
        rps: r.rps(),
    })
}
