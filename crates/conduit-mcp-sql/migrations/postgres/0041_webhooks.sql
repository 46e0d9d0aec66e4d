-- conduit-mcp-sql schema, version 41: webhook delivery of events, shared by
-- every node. A subscription (its key, its secret — a credential, never
-- logged — its expiry, state and safe watermark), the endpoint
-- verifications per (principal, url), and the outbox: one row per message
-- for one subscription, claimed by one node for a lease.
CREATE TABLE conduit_webhook_subscriptions (
    id TEXT COLLATE "C" PRIMARY KEY,
    principal TEXT NOT NULL,
    url TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_until_ms BIGINT,
    refresh_before_ms BIGINT,
    active BOOLEAN NOT NULL,
    acked_through BIGINT NOT NULL,
    fed_through BIGINT NOT NULL,
    failing_since_ms BIGINT,
    last_failure TEXT,
    held_bytes BIGINT NOT NULL
);
CREATE INDEX conduit_webhook_subscriptions_principal ON conduit_webhook_subscriptions (principal);
CREATE INDEX conduit_webhook_subscriptions_lapse ON conduit_webhook_subscriptions (refresh_before_ms)
    WHERE refresh_before_ms IS NOT NULL;
CREATE TABLE conduit_webhook_verifications (
    principal TEXT NOT NULL,
    url TEXT NOT NULL,
    verified_at_ms BIGINT NOT NULL,
    PRIMARY KEY (principal, url)
);
CREATE TABLE conduit_webhook_outbox (
    subscription_id TEXT NOT NULL,
    id TEXT NOT NULL,
    position BIGINT NOT NULL,
    body BYTEA NOT NULL,
    attempts INTEGER NOT NULL,
    due_ms BIGINT NOT NULL,
    lease_node TEXT,
    lease_until_ms BIGINT,
    PRIMARY KEY (subscription_id, id)
);
CREATE INDEX conduit_webhook_outbox_due ON conduit_webhook_outbox (due_ms, position);
CREATE INDEX conduit_webhook_outbox_pending ON conduit_webhook_outbox (subscription_id, position);
