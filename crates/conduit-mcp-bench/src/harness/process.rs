//! The servers' processes: where their binaries are ([`Binaries`]), the command
//! line each peer starts with, and [`Proc`], a running server whose address is
//! read from the `listening on http://ADDR/mcp` line it prints to stderr, measured
//! through `/proc` and killed when dropped.

use super::Harness;
use super::plan::{Peer, Store};
use crate::child::Listening;
use crate::ours::StoreKind;
use crate::procfs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Where the server binaries are.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// `bench-server`.
    pub server: PathBuf,
    /// `bench-echo`.
    pub echo: PathBuf,
    /// `rmcp-peer`; without it the rmcp columns are empty.
    pub rmcp: Option<PathBuf>,
    /// `conduit-mcp-conformance`, the fixture on `http::serve`; without it the
    /// fixture's rows are empty.
    pub fixture: Option<PathBuf>,
    /// The PostgreSQL URL ours runs on with `--store postgres`.
    pub database_url: Option<String>,
    /// The SQLite file ours runs on with `--store sqlite` (removed and recreated for every start).
    pub sqlite_path: PathBuf,
    /// The PostgreSQL schema ours runs on (dropped and recreated for every start).
    pub pg_schema: String,
}

/// A server process, killed when dropped.
pub(super) struct Proc {
    _server: Listening,
    /// Its process id.
    pub(super) pid: u32,
    /// Where it accepts connections.
    pub(super) addr: SocketAddr,
}

impl Proc {
    fn start(program: &PathBuf, args: &[String], env: &[(&str, &str)]) -> Result<Self, String> {
        let mut cmd = Command::new(program);
        cmd.args(args).envs(env.iter().copied());
        let server = Listening::spawn(cmd, &program.display().to_string(), Duration::from_secs(20))?;
        Ok(Self { pid: server.pid, addr: server.addr, _server: server })
    }

    /// CPU time used so far (user + system), in clock ticks.
    pub(super) fn cpu(&self) -> u64 {
        procfs::cpu_ticks(self.pid).unwrap_or(0)
    }

    /// A `/proc/PID/status` figure in KiB (`VmHWM`, `VmRSS`).
    pub(super) fn kib(&self, key: &str) -> u64 {
        procfs::status_kib(self.pid, key).unwrap_or(0)
    }
}

impl Harness {
    /// Starts the rmcp peer in rmcp's default stateful session mode (W8, W9).
    pub(super) fn start_rmcp_stateful(&self) -> Result<Proc, String> {
        let args = ["--listen".to_owned(), "127.0.0.1:0".to_owned(), "--stateful".to_owned()];
        Proc::start(self.bins.rmcp.as_ref().ok_or("no rmcp peer binary")?, &args, &[])
    }

    /// Starts `peer` on an empty store.
    pub(super) fn start(&self, peer: Peer) -> Result<Proc, String> {
        self.start_node(peer, true)
    }

    /// Starts `peer`; ours on SQLite or PostgreSQL starts from an empty store when
    /// `fresh` (a second node joins the first's schema without it).
    pub(super) fn start_node(&self, peer: Peer, fresh: bool) -> Result<Proc, String> {
        let listen = vec!["--listen".to_owned(), "127.0.0.1:0".to_owned()];
        match peer {
            Peer::Ours(store) => {
                let mut args = listen;
                args.extend(["--store".to_owned(), StoreKind::from(store).to_string()]);
                match store {
                    Store::Memory => {}
                    Store::Sqlite => {
                        args.extend(["--database-url".to_owned(), self.bins.sqlite_path.display().to_string()]);
                    }
                    Store::Postgres => {
                        let url = self.bins.database_url.clone().ok_or("--stores postgres needs a database URL")?;
                        args.extend(["--database-url".to_owned(), url]);
                        args.extend(["--pg-schema".to_owned(), self.bins.pg_schema.clone()]);
                    }
                }
                if fresh && store != Store::Memory {
                    args.push("--fresh".to_owned());
                }
                Proc::start(&self.bins.server, &args, &[])
            }
            Peer::Fixture => {
                // Its own default filter, whatever the caller's environment says.
                let env = [("RUST_LOG", "info")];
                Proc::start(self.bins.fixture.as_ref().ok_or("no fixture binary")?, &listen, &env)
            }
            Peer::Rmcp => Proc::start(self.bins.rmcp.as_ref().ok_or("no rmcp peer binary")?, &listen, &[]),
            Peer::Echo => {
                let mut args = listen;
                let [a, b, c] = self.echo_sizes;
                args.extend(["--sizes".to_owned(), format!("{a},{b},{c}")]);
                Proc::start(&self.bins.echo, &args, &[])
            }
        }
    }
}
