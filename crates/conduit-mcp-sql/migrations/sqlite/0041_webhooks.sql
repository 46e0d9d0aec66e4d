-- conduit-mcp-sql schema, version 41: webhook delivery of events, shared by
-- every process on the file. A subscription (its key, its secret — a credential, never
-- logged — its expiry, state and safe watermark), the endpoint
-- verifications per (principal, url), and the outbox: one row per message
-- for one subscription, claimed by one node for a lease.
CREATE TABLE conduit_webhook_subscriptions (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    url TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_until_ms INTEGER,
    refresh_before_ms INTEGER,
    active INTEGER NOT NULL,
    acked_through INTEGER NOT NULL,
    fed_through INTEGER NOT NULL,
    failing_since_ms INTEGER,
    last_failure TEXT,
    held_bytes INTEGER NOT NULL
);
CREATE INDEX conduit_webhook_subscriptions_principal ON conduit_webhook_subscriptions (principal);
CREATE INDEX conduit_webhook_subscriptions_lapse ON conduit_webhook_subscriptions (refresh_before_ms)
    WHERE refresh_before_ms IS NOT NULL;
CREATE TABLE conduit_webhook_verifications (
    principal TEXT NOT NULL,
    url TEXT NOT NULL,
    verified_at_ms INTEGER NOT NULL,
    PRIMARY KEY (principal, url)
) WITHOUT ROWID;
CREATE TABLE conduit_webhook_outbox (
    subscription_id TEXT NOT NULL,
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    body BLOB NOT NULL,
    attempts INTEGER NOT NULL,
    due_ms INTEGER NOT NULL,
    lease_node TEXT,
    lease_until_ms INTEGER,
    PRIMARY KEY (subscription_id, id)
) WITHOUT ROWID;
CREATE INDEX conduit_webhook_outbox_due ON conduit_webhook_outbox (due_ms, position);
CREATE INDEX conduit_webhook_outbox_pending ON conduit_webhook_outbox (subscription_id, position);
