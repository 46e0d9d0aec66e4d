//! [`Egress`]: one webhook attempt under the [`EgressPolicy`] — resolve,
//! check every address, dial only a checked one, never follow a redirect,
//! read a bounded answer.

use super::clients::Clients;
use super::failure::classify;
use super::origin::{Destination, Host, UrlRefusal};
use super::policy::{Admission, EgressPolicy, Rules};
use super::resolver::{SystemResolver, WebhookResolver};
use super::{WebhookAnswer, WebhookTransport};
use crate::config::ConfigError;
use crate::ext::events::webhook::{DeliveryFailure, check_address};
use bytes::{Bytes, BytesMut};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Idle connections a client keeps to its origin (each to an address the
/// attempt that made it checked).
const IDLE_PER_ORIGIN: usize = 8;
/// How long an idle connection is kept.
const IDLE_FOR: Duration = Duration::from_secs(30);

/// The [`WebhookTransport`] that reaches real endpoints under the SSRF rules
/// (the [module](super) says them in order). Cheap to clone.
///
/// ```
/// use conduit_mcp::ext::events::webhook::egress::{Egress, EgressPolicy};
///
/// let mut policy = EgressPolicy::new();
/// // A receiver on this machine, over plain HTTP: the operator's opt-in.
/// policy.allow_origins.push("http://127.0.0.1:8080".into());
/// let egress = Egress::new(&policy).unwrap();
/// assert!(egress.check_url("http://127.0.0.1:8080/hooks").is_ok());
/// assert!(egress.check_url("http://127.0.0.1:9090/hooks").is_err());
/// assert!(egress.check_url("https://10.0.0.7/hooks").is_err());
/// ```
#[derive(Clone)]
pub struct Egress {
    rules: Arc<Rules>,
    resolver: Arc<dyn WebhookResolver>,
    clients: Arc<Clients>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress").field("timeout", &self.rules.timeout).finish_non_exhaustive()
    }
}

/// The resolver behind the per-attempt address pin: it answers nothing, so
/// a name the attempt did not check can never be dialled.
struct NoResolution;

impl reqwest::dns::Resolve for NoResolution {
    fn resolve(&self, _: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async { Err("webhook egress resolves names itself".into()) })
    }
}

impl Egress {
    /// An egress resolving names with the system's resolver.
    pub fn new(policy: &EgressPolicy) -> Result<Self, ConfigError> {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// An egress resolving names with `resolver` (a [`FixedResolver`](super::FixedResolver)
    /// in tests, or an embedder's own).
    pub fn with_resolver(policy: &EgressPolicy, resolver: Arc<dyn WebhookResolver>) -> Result<Self, ConfigError> {
        let egress = Self { rules: Arc::new(Rules::new(policy)?), resolver, clients: Arc::default() };
        // Building a client once here turns a certificate reqwest cannot use
        // into a configuration error instead of a failed delivery.
        let probe = Destination::parse("https://localhost/").expect("a valid URL");
        egress.client(&probe, &[]).map_err(|_| {
            ConfigError::new("ext_events", "webhook_egress.root_certificates", "must be usable root certificates")
        })?;
        Ok(egress)
    }

    /// The checks that need no DNS, for `events/subscribe` to refuse early:
    /// an absolute `https://` URL (or one of an allowlisted origin), with a
    /// host and no credentials, a literal IP host allowed. Every attempt
    /// checks again, with the addresses of that moment.
    pub fn check_url(&self, url: &str) -> Result<(), UrlRefusal> {
        self.rules.admit(&Destination::parse(url)?).map(drop)
    }

    /// The addresses this attempt may dial: all the host's addresses, each
    /// allowed, or a refusal.
    async fn addresses(&self, d: &Destination, admission: Admission) -> Result<Vec<IpAddr>, DeliveryFailure> {
        let addrs = match &d.host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => {
                self.resolver.resolve(name, d.port).await.map_err(|_| DeliveryFailure::ConnectionRefused)?
            }
        };
        if addrs.is_empty() || addrs.iter().any(|ip| check_address(*ip, admission.loopback).is_err()) {
            return Err(DeliveryFailure::ConnectionRefused);
        }
        Ok(addrs)
    }

    /// A client for the origin of `d`, its host name pinned to `addrs`: kept
    /// for the attempts whose check answers exactly `addrs` (its connections
    /// go to them only); no proxy, no redirect, no retry.
    fn client(&self, d: &Destination, addrs: &[IpAddr]) -> reqwest::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .no_proxy()
            .pool_max_idle_per_host(IDLE_PER_ORIGIN)
            .pool_idle_timeout(IDLE_FOR)
            .timeout(self.rules.timeout)
            .dns_resolver(Arc::new(NoResolution))
            .user_agent(concat!("conduit-mcp-webhooks/", env!("CARGO_PKG_VERSION")));
        for root in &self.rules.roots {
            builder = builder.add_root_certificate(root.clone());
        }
        if let Host::Name(name) = &d.host {
            let pinned: Vec<SocketAddr> = addrs.iter().map(|ip| SocketAddr::new(*ip, d.port)).collect();
            builder = builder.resolve_to_addrs(name, &pinned);
        }
        builder.build()
    }

    /// One attempt, unbounded in time (the caller bounds it).
    async fn attempt(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<WebhookAnswer, DeliveryFailure> {
        let refused = |why: UrlRefusal| {
            tracing::debug!(%why, "webhook attempt refused before connecting");
            DeliveryFailure::ConnectionRefused
        };
        let d = Destination::parse(url).map_err(refused)?;
        let admission = self.rules.admit(&d).map_err(refused)?;
        let addrs = self.addresses(&d, admission).await.inspect_err(|_| {
            tracing::debug!(origin = %d.origin, "webhook attempt refused: the host resolves to no allowed address");
        })?;
        let client = self
            .clients
            .get_or_make(&d.origin, &addrs, || self.client(&d, &addrs))
            .map_err(|_| DeliveryFailure::ConnectionRefused)?;
        let mut request = HeaderMap::with_capacity(headers.len() + 1);
        for (name, value) in headers {
            let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) else {
                tracing::warn!(header = %name, "a webhook header is not valid HTTP; the attempt is not made");
                return Err(DeliveryFailure::ConnectionRefused);
            };
            request.insert(name, value);
        }
        request.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let answer = client.post(d.url.clone()).headers(request).body(body).send().await.map_err(|e| {
            let failure = classify(&e);
            tracing::debug!(origin = %d.origin, category = failure.as_str(), "webhook attempt failed");
            failure
        })?;
        let status = answer.status().as_u16();
        Ok(WebhookAnswer { status, body: read_capped(answer, self.rules.max_answer_bytes).await })
    }
}

/// At most `cap` bytes of the answer's body; what a failed read leaves is
/// what there is (the status already decided the attempt).
async fn read_capped(mut answer: reqwest::Response, cap: usize) -> Bytes {
    let mut kept = BytesMut::new();
    while kept.len() < cap {
        match answer.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk[..chunk.len().min(cap - kept.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    kept.freeze()
}

#[async_trait::async_trait]
impl WebhookTransport for Egress {
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<WebhookAnswer, DeliveryFailure> {
        tokio::time::timeout(self.rules.timeout, self.attempt(url, headers, body))
            .await
            .unwrap_or(Err(DeliveryFailure::Timeout))
    }
}
