//! Finding Node 22 and installing the authorization server's npm packages, once
//! per process (and under a file lock across processes).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `tests/oauth/` of the repository: `as.mjs`, `package.json`, the lock file.
pub(crate) fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/oauth")
}

/// Whether this run must have the authorization server (CI): then a missing
/// Node fails the test instead of skipping it.
pub(crate) fn required() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    set("CI") || set("CONDUIT_REQUIRE_POSTGRES") || set("CONDUIT_REQUIRE_OAUTH")
}

/// What stops the server from starting here.
#[derive(Debug, Clone)]
pub(crate) enum Unavailable {
    /// No `npx` (and no `CONDUIT_NODE22`): the tests may skip unless required.
    NoNode(String),
    /// Node is there but something failed: always a test failure.
    Broken(String),
}

/// The path of a Node >= 22 binary, with the packages installed; found once.
pub(crate) fn prepared() -> Result<PathBuf, Unavailable> {
    static PREPARED: OnceLock<Result<PathBuf, Unavailable>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let node = node22()?;
            install().map_err(|e| Unavailable::Broken(e.0))?;
            Ok(node)
        })
        .clone()
}

fn node22() -> Result<PathBuf, Unavailable> {
    if let Some(p) = std::env::var_os("CONDUIT_NODE22").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    // npx fetches Node 22 from the registry once and keeps it in its cache.
    let out = Command::new("npx")
        .args(["-y", "-p", "node@22", "--", "node", "-p", "process.execPath"])
        .output()
        .map_err(|e| Unavailable::NoNode(format!("cannot run npx ({e}); install Node.js and npm")))?;
    if !out.status.success() {
        return Err(Unavailable::Broken(format!(
            "npx -p node@22 failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !path.is_file() {
        return Err(Unavailable::Broken(format!("npx -p node@22 named {} which is not a file", path.display())));
    }
    Ok(path)
}

/// The version `package.json` pins for `name`.
fn pinned(dir: &Path, name: &str) -> Result<String> {
    let text = std::fs::read_to_string(dir.join("package.json")).map_err(|e| Error(format!("package.json: {e}")))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error(format!("package.json: {e}")))?;
    v["dependencies"][name].as_str().map(str::to_owned).ok_or_else(|| Error(format!("package.json pins no {name}")))
}

fn installed(dir: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("node_modules").join(name).join("package.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["version"].as_str().map(str::to_owned)
}

fn up_to_date(dir: &Path) -> Result<bool> {
    for name in ["oidc-provider", "jose"] {
        if installed(dir, name) != Some(pinned(dir, name)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `npm ci` in the package directory unless the pinned versions are there.
fn install() -> Result<()> {
    let dir = package_dir();
    if up_to_date(&dir)? {
        return Ok(());
    }
    let lock = std::fs::File::create(dir.join(".install.lock")).map_err(|e| Error(format!("install lock: {e}")))?;
    lock.lock().map_err(|e| Error(format!("install lock: {e}")))?;
    // Another process may have installed while this one waited.
    if up_to_date(&dir)? {
        return Ok(());
    }
    let out = Command::new("npx")
        .args(["-y", "-p", "node@22", "--", "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .output()
        .map_err(|e| Error(format!("cannot run npx: {e}")))?;
    if !out.status.success() {
        return Err(Error(format!("npm ci in {} failed: {}", dir.display(), String::from_utf8_lossy(&out.stderr))));
    }
    Ok(())
}
