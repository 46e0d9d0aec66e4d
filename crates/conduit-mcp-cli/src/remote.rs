//! What every client command shares: how to reach the server (a URL, or
//! `--stdio -- CMD ARGS...`), credentials, and the exit codes.

use conduit_mcp::client::{Client, ClientBuilder, ClientError, InputHandler};
use std::process::ExitCode;

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

/// Prints one line for a client error and returns its exit code.
pub(crate) fn fail(e: &ClientError) -> Exit {
    eprintln!("error: {e}");
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

    /// Connects to the server.
    pub(crate) async fn connect(
        &self,
        url: Option<&str>,
        handler: impl InputHandler + 'static,
    ) -> Result<Client, Exit> {
        let mut b = match url {
            Some(u) => ClientBuilder::http(u),
            None => ClientBuilder::stdio(self.command[0].clone(), self.command[1..].iter().cloned()),
        };
        b = b.client_info("conduit-mcp-cli", env!("CARGO_PKG_VERSION")).input_handler(handler);
        if let Some(t) = &self.token {
            b = b.token(t);
        }
        for h in &self.headers {
            let Some((k, v)) = h.split_once(':') else {
                return Err(usage(format!("--header {h:?}: expected 'Name: value'")));
            };
            b = b.header(k.trim(), v.trim());
        }
        b.connect().await.map_err(|e| fail(&e))
    }
}
