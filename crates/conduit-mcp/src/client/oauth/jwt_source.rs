//! Where a JWT the client presents but does not sign comes from: a
//! workload's identity token (workload identity federation) or a person's ID
//! token (enterprise-managed authorization). Read again at every use, so a
//! token that its platform rotates in a file or variable is picked up.

use super::assertion::read_small;
use crate::client::error::ClientError;
use crate::client::sanitize::shown;
use std::fmt;
use std::path::PathBuf;

/// The largest token read.
const MAX_TOKEN: u64 = 64 * 1024;

/// Where a JWT is read from, at each use (see the [module docs](super)).
#[derive(Clone)]
pub struct JwtSource(Source);

#[derive(Clone)]
enum Source {
    File(PathBuf),
    Env(String),
    Value(String),
}

impl fmt::Debug for JwtSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Source::File(p) => f.debug_tuple("JwtSource::File").field(p).finish(),
            Source::Env(v) => f.debug_tuple("JwtSource::Env").field(v).finish(),
            Source::Value(_) => f.write_str("JwtSource::Value(<redacted>)"),
        }
    }
}

impl JwtSource {
    /// The token in the file at `path` (surrounding whitespace ignored), read at each use.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self(Source::File(path.into()))
    }

    /// The token in the environment variable `name`, read at each use.
    pub fn env(name: impl Into<String>) -> Self {
        Self(Source::Env(name.into()))
    }

    /// This token, as it is (it does not rotate).
    pub fn value(token: impl Into<String>) -> Self {
        Self(Source::Value(token.into()))
    }

    /// Where it reads, as a credential store keeps it (`file:PATH`, `env:NAME`); `None` for a
    /// [`value`](Self::value), which is never stored.
    pub(crate) fn stored(&self) -> Option<String> {
        match &self.0 {
            Source::File(p) => Some(format!("file:{}", p.display())),
            Source::Env(v) => Some(format!("env:{v}")),
            Source::Value(_) => None,
        }
    }

    /// The source a credential store kept ([`stored`](Self::stored)).
    pub(crate) fn from_stored(s: &str) -> Option<Self> {
        match s.split_once(':')? {
            ("file", p) => Some(Self::file(p)),
            ("env", v) => Some(Self::env(v)),
            _ => None,
        }
    }

    /// A client secret now, as its source holds it (a file's one trailing line end dropped):
    /// present and at most 64 KiB; a secret may hold spaces, so nothing else is refused.
    pub(crate) fn read_secret(&self) -> Result<String, ClientError> {
        let (secret, from) = match &self.0 {
            Source::File(p) => {
                let text = String::from_utf8_lossy(&read_small(p, MAX_TOKEN)?).into_owned();
                let line = text.strip_suffix('\n').map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
                (line.to_owned(), format!("the file {}", shown(&p.display().to_string())))
            }
            Source::Env(name) => {
                (std::env::var(name).unwrap_or_default(), format!("the environment variable {}", shown(name)))
            }
            Source::Value(t) => (t.clone(), "the secret given".to_owned()),
        };
        if secret.is_empty() || secret.len() as u64 > MAX_TOKEN {
            return Err(ClientError::OAuth(format!("no client secret in {from} (at most 64 KiB)")));
        }
        Ok(secret)
    }

    /// The token now: present, at most 64 KiB, and sendable in a form (visible ASCII).
    pub(crate) fn read(&self) -> Result<String, ClientError> {
        let (token, from) = match &self.0 {
            Source::File(p) => {
                let bytes = read_small(p, MAX_TOKEN)?;
                (
                    String::from_utf8_lossy(&bytes).trim().to_owned(),
                    format!("the file {}", shown(&p.display().to_string())),
                )
            }
            Source::Env(name) => (
                std::env::var(name).unwrap_or_default().trim().to_owned(),
                format!("the environment variable {}", shown(name)),
            ),
            Source::Value(t) => (t.trim().to_owned(), "the token given".to_owned()),
        };
        if token.is_empty() {
            return Err(ClientError::OAuth(format!("no token in {from}")));
        }
        if token.len() as u64 > MAX_TOKEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(ClientError::OAuth(format!(
                "{from} holds nothing usable (only visible ASCII, at most 64 KiB)"
            )));
        }
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_again_at_each_use() {
        let dir = std::env::temp_dir().join(format!("conduit-jwt-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "a.b.c\n").unwrap();
        let src = JwtSource::file(&path);
        assert_eq!(src.read().unwrap(), "a.b.c");
        std::fs::write(&path, "d.e.f").unwrap();
        assert_eq!(src.read().unwrap(), "d.e.f");
        std::fs::write(&path, "  \n").unwrap();
        assert!(src.read().unwrap_err().to_string().contains("no token"));
        std::fs::write(&path, "a.b\nc").unwrap();
        assert!(src.read().is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(JwtSource::file(dir.join("missing")).read().is_err());
        assert!(JwtSource::env("CONDUIT_TEST_NO_SUCH_VARIABLE_SET").read().is_err());
        assert_eq!(JwtSource::value(" x.y.z ").read().unwrap(), "x.y.z");
        assert!(!format!("{:?}", JwtSource::value("secret")).contains("secret"));
        assert_eq!(JwtSource::value("t").stored(), None);
        let env = JwtSource::env("CI_JOB_JWT").stored().unwrap();
        assert_eq!(JwtSource::from_stored(&env).unwrap().stored().unwrap(), "env:CI_JOB_JWT");
        assert_eq!(JwtSource::from_stored("file:/a:b").unwrap().stored().unwrap(), "file:/a:b");
        assert!(JwtSource::from_stored("value:x").is_none());
        assert_eq!(JwtSource::value("a secret").read_secret().unwrap(), "a secret", "spaces are kept");
        assert!(JwtSource::value("").read_secret().is_err());
    }
}
