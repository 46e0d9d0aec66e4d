//! `serve`'s webhook flags, laid over the `[events.webhooks]` table: any of
//! them (or the table) turns webhook delivery of events on; without either
//! it stays off, since the operator has named no egress rules.

use conduit_mcp::ext::events::webhook::WebhookRules;

#[derive(clap::Args, Debug, Default)]
pub(crate) struct WebhookArgs {
    /// Webhooks: an origin (`scheme://host:port`) callbacks may name with plain http, and that may
    /// resolve to loopback (repeatable). Any --webhook-* flag, or an `[events.webhooks]` table,
    /// turns webhook delivery of events on.
    #[arg(long = "webhook-allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// Webhooks: an origin whose endpoints need no verification handshake (repeatable).
    #[arg(long = "webhook-verified-origin", value_name = "ORIGIN")]
    pub(crate) verified_origins: Vec<String>,
    /// Webhooks: let any https callback resolve to a loopback address (a relay on this machine).
    #[arg(long)]
    pub(crate) webhook_allow_loopback: bool,
    /// Webhooks: a PEM file of root certificates trusted besides the web PKI ones, for receivers
    /// with a private certificate authority (repeatable).
    #[arg(long = "webhook-root-cert", value_name = "FILE")]
    pub(crate) root_certs: Vec<std::path::PathBuf>,
}

impl WebhookArgs {
    /// Whether any flag is set.
    pub(crate) fn any(&self) -> bool {
        !self.allow_origins.is_empty()
            || !self.verified_origins.is_empty()
            || self.webhook_allow_loopback
            || !self.root_certs.is_empty()
    }

    /// The file's rules with the flags added (the root certificates read); `None` when neither
    /// says anything (webhooks off).
    pub(crate) fn rules(&self, file: Option<&WebhookRules>) -> Result<Option<WebhookRules>, String> {
        if file.is_none() && !self.any() {
            return Ok(None);
        }
        let mut rules = file.cloned().unwrap_or_default();
        rules.allow_origins.extend(self.allow_origins.iter().cloned());
        rules.verified_origins.extend(self.verified_origins.iter().cloned());
        rules.allow_loopback |= self.webhook_allow_loopback;
        for path in &self.root_certs {
            let pem = std::fs::read_to_string(path)
                .map_err(|e| format!("--webhook-root-cert {}: cannot read it ({e})", path.display()))?;
            rules.root_certificates_pem.push(pem);
        }
        Ok(Some(rules))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_are_off_unless_a_flag_or_the_table_says_otherwise() {
        assert!(WebhookArgs::default().rules(None).unwrap().is_none());
        let flags = WebhookArgs { allow_origins: vec!["http://127.0.0.1:9000".into()], ..WebhookArgs::default() };
        let rules = flags.rules(None).unwrap().unwrap();
        assert_eq!(rules.allow_origins, ["http://127.0.0.1:9000"]);
        let mut table = WebhookRules::default();
        table.verified_origins.push("https://hooks.example".into());
        let both = flags.rules(Some(&table)).unwrap().unwrap();
        assert_eq!((both.allow_origins.len(), both.verified_origins.len()), (1, 1));
        assert!(WebhookArgs::default().rules(Some(&table)).unwrap().is_some(), "the table alone turns them on");
    }

    #[test]
    fn a_root_certificate_file_is_read_and_a_missing_one_refused() {
        let path = std::env::temp_dir().join(format!("conduit-root-{:016x}.pem", rand::random::<u64>()));
        std::fs::write(&path, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let flags = WebhookArgs { root_certs: vec![path.clone()], ..WebhookArgs::default() };
        let rules = flags.rules(None).unwrap().expect("the flag alone turns webhooks on");
        assert_eq!(rules.root_certificates_pem, ["-----BEGIN CERTIFICATE-----\n"]);
        std::fs::remove_file(&path).unwrap();
        let e = flags.rules(None).unwrap_err();
        assert!(e.starts_with("--webhook-root-cert "), "{e}");
    }
}
