//! What every client command shares: how to reach the server (a URL, or
//! `--stdio -- CMD ARGS...`), credentials, and the exit codes.

use crate::credentials::{FileCredentials, config_dir};
use crate::shell::quote;
use conduit_mcp::client::ledger::SqliteLedger;
use conduit_mcp::client::oauth::OAuth;
use conduit_mcp::client::sanitize::{excerpt, one_line};
use conduit_mcp::client::{Client, ClientBuilder, ClientError, InputHandler};
use std::process::ExitCode;
use std::time::Duration;

/// The documented exit codes of the client commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The call or task completed.
    Ok,
    /// A tool error (`isError`) or a failed task.
    ToolError,
    /// A usage or protocol error (bad arguments, unreachable or misbehaving server, expired task).
    Usage,
    /// The server cancelled the task.
    Cancelled,
    /// Interrupted with Ctrl-C (the task was asked to cancel).
    Interrupted,
}

impl Exit {
    /// The process exit status.
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::ToolError => 1,
            Exit::Usage => 2,
            Exit::Cancelled => 3,
            Exit::Interrupted => 130,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

/// The name the CLI registers with at authorization servers (`client_name`).
const CLIENT_NAME: &str = "conduit-mcp";
/// The name in the `clientInfo` the CLI sends to MCP servers.
const CLIENT_INFO_NAME: &str = "conduit-mcp-cli";

/// The most characters of an error message printed (a server's text in it can be long).
const MAX_ERROR_CHARS: usize = 1000;

/// Prints one line for a client error and returns its exit code. Server
/// text in it (error messages) is escaped: it cannot act on the terminal; it
/// is cut at [`MAX_ERROR_CHARS`]; and in a command line the error suggests,
/// every word is shell-quoted.
pub(crate) fn fail(e: &ClientError) -> Exit {
    match e {
        ClientError::LoginRequired(url) => {
            let url = one_line(url);
            eprintln!(
                "error: {url} requires authorization: run `conduit-mcp login {}` (or pass --token TOKEN)",
                quote(&url)
            );
        }
        ClientError::ScopeRequired { server, scopes } => {
            let (url, scopes) = (one_line(server), one_line(&scopes.join(" ")).into_owned());
            eprintln!(
                "error: {url} asks for more scope: run `conduit-mcp login {} --scope {}`",
                quote(&url),
                quote(&scopes)
            );
        }
        ClientError::Ledger { source, task_id: Some(id) } => {
            eprintln!("error: {}", excerpt(&source.to_string(), MAX_ERROR_CHARS));
            eprintln!(
                "the task was created but not recorded; it runs on: `conduit-mcp task wait URL {}` follows it",
                quote(&one_line(id))
            );
        }
        _ => eprintln!("error: {}", excerpt(&e.to_string(), MAX_ERROR_CHARS)),
    }
    Exit::Usage
}

/// Prints a usage error and returns its exit code.
pub(crate) fn usage(msg: impl std::fmt::Display) -> Exit {
    eprintln!("error: {msg}");
    Exit::Usage
}

/// How to reach the server (flattened into every client command).
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Remote {
    /// Send `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN")]
    pub(crate) token: Option<String>,
    /// An extra HTTP header, `'Name: value'` (repeatable).
    #[arg(long = "header", value_name = "'K: V'")]
    pub(crate) headers: Vec<String>,
    /// Seconds a server has to start answering (and to send a whole JSON body).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub(crate) timeout: f64,
    /// Trust the CA certificate(s) in this PEM file too (a private CA), besides the usual roots.
    #[arg(long, value_name = "FILE")]
    pub(crate) ca_cert: Option<std::path::PathBuf>,
    /// Send tokens over plain http:// to a host that is not this machine (anyone on the path can read them).
    #[arg(long)]
    pub(crate) allow_insecure_http: bool,
    /// Print raw JSON instead of readable text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Start the server as a child process speaking stdio: give `-- CMD ARGS...` instead of URL.
    #[arg(long)]
    pub(crate) stdio: bool,
    /// The server command (after `--`, with `--stdio`).
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

impl Remote {
    /// Splits the positionals: with `--stdio` they are all operands; otherwise the first is the URL.
    pub(crate) fn split(&self, positionals: Vec<String>) -> Result<(Option<String>, Vec<String>), Exit> {
        if self.stdio {
            if self.command.is_empty() {
                return Err(usage("--stdio needs the server command after `--`"));
            }
            return Ok((None, positionals));
        }
        if !self.command.is_empty() {
            return Err(usage("a command after `--` needs --stdio"));
        }
        let mut it = positionals.into_iter();
        match it.next() {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok((Some(url), it.collect())),
            Some(other) => Err(usage(format!("{other:?} is not an http(s) URL (or use --stdio -- CMD ARGS...)"))),
            None => Err(usage("the server URL is missing (or use --stdio -- CMD ARGS...)")),
        }
    }

    /// A builder for `url` with the transport flags (timeout, CA, headers).
    pub(crate) fn http_builder(&self, url: &str) -> Result<ClientBuilder, Exit> {
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| usage(format!("--timeout {}: expected a positive number of seconds", self.timeout)))?;
        let mut b = ClientBuilder::http(url).timeout(timeout).allow_insecure_http(self.allow_insecure_http);
        if self.allow_insecure_http && b.credentials_in_clear_text() {
            eprintln!(
                "warning: --allow-insecure-http: credentials for {} go over plain http://, readable by anyone on the path",
                one_line(url)
            );
        }
        if let Some(path) = &self.ca_cert {
            let pem = std::fs::read(path).map_err(|e| usage(format!("--ca-cert {}: {e}", path.display())))?;
            b = b.ca_certificate_pem(pem);
        }
        self.add_headers(b)
    }

    fn add_headers(&self, mut b: ClientBuilder) -> Result<ClientBuilder, Exit> {
        for h in &self.headers {
            let Some((k, v)) = h.split_once(':') else {
                return Err(usage(format!("--header {h:?}: expected 'Name: value'")));
            };
            b = b.header(k.trim(), v.trim());
        }
        Ok(b)
    }

    /// The stored-credential store of the CLI.
    pub(crate) fn credentials() -> Result<FileCredentials, Exit> {
        config_dir().map(FileCredentials::new).map_err(usage)
    }

    /// `oauth` as the CLI uses it: its name at authorization servers, its
    /// credential store.
    pub(crate) fn oauth(oauth: OAuth) -> Result<OAuth, Exit> {
        Ok(oauth.client_name(CLIENT_NAME).store(Self::credentials()?))
    }

    /// Connects to the server: with `--token`, that token; otherwise the
    /// tokens `conduit-mcp login` stored for the URL, refreshed as needed.
    /// No task is written to the ledger.
    pub(crate) async fn connect(
        &self,
        url: Option<&str>,
        handler: impl InputHandler + 'static,
    ) -> Result<Client, Exit> {
        self.connect_recording(url, handler, None).await
    }

    /// [`connect`](Self::connect), writing the tasks of an HTTP server to
    /// `ledger` (a stdio server's tasks are its child process's own).
    pub(crate) async fn connect_recording(
        &self,
        url: Option<&str>,
        handler: impl InputHandler + 'static,
        ledger: Option<SqliteLedger>,
    ) -> Result<Client, Exit> {
        let mut b = match url {
            Some(u) => {
                let b = self.http_builder(u)?;
                match &self.token {
                    Some(t) => b.token(t),
                    None => b.oauth(Self::oauth(OAuth::new())?),
                }
            }
            None => {
                let b = ClientBuilder::stdio(self.command[0].clone(), self.command[1..].iter().cloned());
                self.add_headers(b)?
            }
        };
        // A person's call: written down before it is sent, so a kill mid-call leaves a trace too.
        b = match ledger {
            Some(l) if url.is_some() => b.ledger(l).record_calls_in_flight(true),
            _ => b.no_ledger(),
        };
        b = b.client_info(CLIENT_INFO_NAME, env!("CARGO_PKG_VERSION")).input_handler(handler);
        b.connect().await.map_err(|e| fail(&e))
    }
}
