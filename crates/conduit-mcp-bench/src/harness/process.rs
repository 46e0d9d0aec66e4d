//! The servers' processes: where their binaries are ([`Binaries`]), the command
//! line each peer starts with, and [`Proc`], a running server whose address is
//! read from the `listening on http://ADDR/mcp` line it prints to stderr, measured
//! through `/proc` and killed when dropped.

use super::Harness;
use super::plan::{Peer, Store};
use crate::ours::StoreKind;
use crate::procfs;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
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
    child: Child,
    /// Its process id.
    pub(super) pid: u32,
    /// Where it accepts connections.
    pub(super) addr: SocketAddr,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn start(program: &PathBuf, args: &[String], env: &[(&str, &str)]) -> Result<Self, String> {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let pid = child.id();
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let t2 = tail.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("listening on http://")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
                if let Ok(mut t) = t2.lock() {
                    t.push_back(line);
                    if t.len() > 20 {
                        t.pop_front();
                    }
                }
            }
        });
        let mut p = Self { child, pid, addr: SocketAddr::from(([127, 0, 0, 1], 0)), tail };
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(a) => {
                p.addr = a.parse().map_err(|e| format!("{} printed a bad address {a:?}: {e}", program.display()))?;
                Ok(p)
            }
            Err(_) => Err(format!("{} did not start listening: {}", program.display(), p.tail())),
        }
    }

    fn tail(&self) -> String {
        self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join(" | ")).unwrap_or_default()
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
