//! The CLI's credential store: one JSON file per server (tokens) and per
//! authorization server issuer (client registrations) under
//! `$CONDUIT_MCP_CONFIG_DIR` (default: the user's configuration directory,
//! `conduit-mcp/`), readable by their owner only. A file is replaced
//! atomically (written beside, then renamed), so a process reading it never
//! sees half of one, and a refresh token rotated by one command is what the
//! next one reads.

use async_trait::async_trait;
use conduit_mcp::client::ClientError;
use conduit_mcp::client::oauth::{ClientRegistration, CredentialStore, StoredTokens};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Tokens and registrations in files.
#[derive(Debug, Clone)]
pub(crate) struct FileCredentials {
    dir: PathBuf,
}

/// `$CONDUIT_MCP_CONFIG_DIR`, else `$XDG_CONFIG_HOME/conduit-mcp`, else
/// `~/.config/conduit-mcp` (`%APPDATA%\conduit-mcp` on Windows).
pub(crate) fn config_dir() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("CONDUIT_MCP_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
    };
    base.map(|b| b.join("conduit-mcp"))
        .ok_or_else(|| "no configuration directory: set CONDUIT_MCP_CONFIG_DIR".to_owned())
}

/// The largest file of the store read: tokens and registrations take a few KiB.
const MAX_FILE: u64 = 1024 * 1024;

fn io(what: &Path, e: std::io::Error) -> ClientError {
    ClientError::Input(format!("credential store {}: {e}", what.display()))
}

/// A file name for `key`: its SHA-256, in hex (URLs and issuers hold characters no file system likes).
fn file_name(key: &str) -> String {
    let d = Sha256::digest(key.as_bytes());
    d.iter().take(16).map(|b| format!("{b:02x}")).collect::<String>() + ".json"
}

impl FileCredentials {
    /// The store under `dir` (created on first write).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn path(&self, kind: &str, key: &str) -> PathBuf {
        self.dir.join(kind).join(file_name(key))
    }

    fn read<T: DeserializeOwned>(&self, kind: &str, key: &str) -> Result<Option<T>, ClientError> {
        let path = self.path(kind, key);
        match read_entry::<T>(&path)? {
            // A hash collision (or a hand-copied file) holds another key: not ours.
            Some(entry) => Ok((entry.key == key).then_some(entry.value)),
            None => Ok(None),
        }
    }

    /// Every client registration stored (files that cannot be read are skipped).
    pub(crate) fn registrations(&self) -> Result<Vec<ClientRegistration>, ClientError> {
        let dir = self.dir.join("clients");
        let files = match std::fs::read_dir(&dir) {
            Ok(files) => files,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&dir, e)),
        };
        let names = files.filter_map(Result::ok).map(|f| f.path());
        let json = names.filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
        });
        Ok(json.filter_map(|p| read_entry::<ClientRegistration>(&p).ok().flatten()).map(|e| e.value).collect())
    }

    fn write<T: Serialize>(&self, kind: &str, key: &str, value: &T) -> Result<(), ClientError> {
        let dir = self.dir.join(kind);
        create_private_dir(&self.dir)?;
        create_private_dir(&dir)?;
        let path = dir.join(file_name(key));
        let tmp = dir.join(format!(".{}.{}.tmp", file_name(key), std::process::id()));
        let body = serde_json::to_vec_pretty(&Entry { key: key.to_owned(), value })
            .map_err(|e| ClientError::Input(format!("credential store: {e}")))?;
        let mut f = private_file(&tmp).map_err(|e| io(&tmp, e))?;
        f.write_all(&body).and_then(|()| f.sync_all()).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))
    }

    fn remove(&self, kind: &str, key: &str) -> Result<(), ClientError> {
        let path = self.path(kind, key);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&path, e)),
            _ => Ok(()),
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry<T> {
    key: String,
    value: T,
}

/// The entry in the file at `path` (`None` when there is none), read only
/// up to [`MAX_FILE`]: a larger file is not one this program wrote.
fn read_entry<T: DeserializeOwned>(path: &Path) -> Result<Option<Entry<T>>, ClientError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path, e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| io(path, e))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(ClientError::Input(format!(
            "credential store {}: larger than 1 MiB, not a file conduit-mcp wrote (log in again to replace it, or remove it)",
            path.display()
        )));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ClientError::Input(format!("credential store {}: {e}", path.display())))
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> Result<(), ClientError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !dir.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| io(dir, e))?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| io(dir, e))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> Result<(), ClientError> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(path)
}

#[async_trait]
impl CredentialStore for FileCredentials {
    async fn tokens(&self, resource: &str) -> Result<Option<StoredTokens>, ClientError> {
        self.read("tokens", resource)
    }

    async fn save_tokens(&self, resource: &str, tokens: &StoredTokens) -> Result<(), ClientError> {
        self.write("tokens", resource, tokens)
    }

    async fn remove_tokens(&self, resource: &str) -> Result<(), ClientError> {
        self.remove("tokens", resource)
    }

    async fn registration(&self, issuer: &str) -> Result<Option<ClientRegistration>, ClientError> {
        self.read("clients", issuer)
    }

    async fn save_registration(&self, issuer: &str, registration: &ClientRegistration) -> Result<(), ClientError> {
        self.write("clients", issuer, registration)
    }
}
