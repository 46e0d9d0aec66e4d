//! Protocol revisions, the two eras, and the one decision that picks a
//! message's era.

/// The newest revision this library speaks.
pub const LATEST_PROTOCOL_VERSION: &str = "2026-07-28";

/// The modern revisions (stateless, per-request `_meta`), newest first.
pub const MODERN_VERSIONS: &[&str] = &[LATEST_PROTOCOL_VERSION];

/// The legacy revisions (`initialize` handshake and sessions), newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Which family of the protocol a message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// `2026-07-28` and later: stateless, per-request `_meta`.
    Modern,
    /// `2025-11-25` and earlier: `initialize` handshake and sessions.
    Legacy,
}

impl Era {
    /// Both eras, modern first.
    pub const ALL: [Era; 2] = [Era::Modern, Era::Legacy];

    /// The era of a known revision.
    pub fn of_version(version: &str) -> Option<Self> {
        if MODERN_VERSIONS.contains(&version) {
            Some(Self::Modern)
        } else if LEGACY_VERSIONS.contains(&version) {
            Some(Self::Legacy)
        } else {
            None
        }
    }

    /// A small index (0 modern, 1 legacy), for per-era tables.
    pub fn index(self) -> usize {
        match self {
            Self::Modern => 0,
            Self::Legacy => 1,
        }
    }
}

/// Which eras a server answers (`--era modern|legacy|both`; default both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ServedEras {
    /// `2026-07-28` only: a legacy `initialize` is refused with `-32022` naming it.
    Modern,
    /// The `initialize` handshake and sessions only.
    Legacy,
    /// Both, on one endpoint.
    #[default]
    Both,
}

impl ServedEras {
    /// Whether `era` is served.
    pub fn serves(self, era: Era) -> bool {
        matches!((self, era), (Self::Both, _) | (Self::Modern, Era::Modern) | (Self::Legacy, Era::Legacy))
    }

    /// Reads `modern`, `legacy` or `both`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "modern" => Some(Self::Modern),
            "legacy" => Some(Self::Legacy),
            "both" => Some(Self::Both),
            _ => None,
        }
    }
}

/// What the era decision looks at, gathered by the transport and dispatch.
#[derive(Debug, Clone, Copy, Default)]
pub struct EraSignals<'a> {
    /// Whether `params._meta` carries `io.modelcontextprotocol/protocolVersion`.
    pub modern_meta: bool,
    /// The JSON-RPC method.
    pub method: &'a str,
    /// Whether the message arrived inside a live legacy session (an HTTP
    /// `Mcp-Session-Id` the server knows, or an stdio process that did `initialize`).
    pub legacy_session: bool,
    /// The HTTP `MCP-Protocol-Version` header, if any.
    pub version_header: Option<&'a str>,
}

/// Picks the era of one message (protocol brief §1.6):
/// modern `_meta` → modern, even for `initialize`; else `initialize` → the
/// legacy handshake; else a live legacy session or a legacy version header →
/// legacy; anything else is a (possibly malformed) modern request.
pub fn decide_era(s: &EraSignals<'_>) -> Era {
    if s.modern_meta {
        return Era::Modern;
    }
    if s.method == super::methods::INITIALIZE
        || s.legacy_session
        || s.version_header.is_some_and(|v| LEGACY_VERSIONS.contains(&v.trim()))
    {
        return Era::Legacy;
    }
    Era::Modern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision() {
        let base = EraSignals { method: "tools/list", ..EraSignals::default() };
        assert_eq!(decide_era(&base), Era::Modern);
        assert_eq!(decide_era(&EraSignals { method: "initialize", ..base }), Era::Legacy);
        assert_eq!(decide_era(&EraSignals { method: "initialize", modern_meta: true, ..base }), Era::Modern);
        assert_eq!(decide_era(&EraSignals { legacy_session: true, ..base }), Era::Legacy);
        assert_eq!(decide_era(&EraSignals { version_header: Some("2025-06-18"), ..base }), Era::Legacy);
        assert_eq!(decide_era(&EraSignals { version_header: Some("2026-07-28"), ..base }), Era::Modern);
        assert_eq!(Era::of_version("2025-11-25"), Some(Era::Legacy));
        assert_eq!(Era::of_version("1999-01-01"), None);
    }
}
