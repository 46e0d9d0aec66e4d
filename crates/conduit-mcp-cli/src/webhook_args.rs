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
}

impl WebhookArgs {
    /// Whether any flag is set.
    pub(crate) fn any(&self) -> bool {
        !self.allow_origins.is_empty() || !self.verified_origins.is_empty() || self.webhook_allow_loopback
    }

    /// The file's rules with the flags added; `None` when neither says anything (webhooks off).
    pub(crate) fn rules(&self, file: Option<&WebhookRules>) -> Option<WebhookRules> {
        if file.is_none() && !self.any() {
            return None;
        }
        let mut rules = file.cloned().unwrap_or_default();
        rules.allow_origins.extend(self.allow_origins.iter().cloned());
        rules.verified_origins.extend(self.verified_origins.iter().cloned());
        rules.allow_loopback |= self.webhook_allow_loopback;
        Some(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhooks_are_off_unless_a_flag_or_the_table_says_otherwise() {
        assert!(WebhookArgs::default().rules(None).is_none());
        let flags = WebhookArgs { allow_origins: vec!["http://127.0.0.1:9000".into()], ..WebhookArgs::default() };
        let rules = flags.rules(None).unwrap();
        assert_eq!(rules.allow_origins, ["http://127.0.0.1:9000"]);
        let mut table = WebhookRules::default();
        table.verified_origins.push("https://hooks.example".into());
        let both = flags.rules(Some(&table)).unwrap();
        assert_eq!((both.allow_origins.len(), both.verified_origins.len()), (1, 1));
        assert!(WebhookArgs::default().rules(Some(&table)).is_some(), "the table alone turns them on");
    }
}
