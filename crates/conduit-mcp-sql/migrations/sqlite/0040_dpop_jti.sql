-- conduit-mcp-sql schema, version 40: the DPoP proofs (RFC 9449) taken, so a
-- proof is taken once by every process on the file. A row is the SHA-256 of
-- the proof key's thumbprint and the proof's jti (neither can be read back),
-- kept until the proof's acceptance window closes; expired rows are swept by
-- range on the expiry index.
CREATE TABLE conduit_dpop_jti (
    proof_key BLOB PRIMARY KEY,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX conduit_dpop_jti_expiry ON conduit_dpop_jti (expires_at_ms);
