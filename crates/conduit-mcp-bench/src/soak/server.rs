//! The reference server (`conduit-mcp serve`) as a child process: started on
//! `127.0.0.1:0` (its address read from the `listening on http://ADDR/mcp` line
//! on stderr), measured through `/proc` (RSS, open fds, which of its sockets are
//! client connections and which go to the database), stopped with SIGTERM.

use crate::child::Listening;
use crate::procfs;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The PostgreSQL port: sockets of the server to it are its database connections.
pub const PG_PORT: u16 = 5432;

/// A running reference server, killed when dropped.
pub struct ServerProc {
    server: Listening,
    /// Its process id.
    pub pid: u32,
    /// Where it accepts connections.
    pub addr: SocketAddr,
    db_file: Option<String>,
}

/// The server's open file descriptors, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fds {
    /// All of them.
    pub total: u64,
    /// TCP sockets on the server's port: the listener and accepted client connections.
    pub clients: u64,
    /// The database's: TCP sockets to PostgreSQL's port, or SQLite's files.
    pub database: u64,
}

impl ServerProc {
    /// Starts `bin serve --listen 127.0.0.1:0 ARGS…` and waits (up to 30 s) for its address.
    pub fn start(bin: &Path, args: &[String]) -> Result<Self, String> {
        Self::start_env(bin, args, &[])
    }

    /// Like [`start`](Self::start), with these environment variables set too.
    pub fn start_env(bin: &Path, args: &[String], env: &[(&str, &str)]) -> Result<Self, String> {
        let mut cmd = Command::new(bin);
        cmd.args(["serve", "--listen", "127.0.0.1:0"]).args(args).env("NO_COLOR", "1");
        cmd.envs(env.iter().copied());
        let server = Listening::spawn(cmd, "the server", Duration::from_secs(30))?;
        Ok(Self { pid: server.pid, addr: server.addr, server, db_file: None })
    }

    /// The last lines the server wrote to stderr.
    pub fn tail(&self) -> String {
        self.server.tail()
    }

    /// Resident memory, KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        procfs::status_kib(self.pid, "VmRSS").unwrap_or(0)
    }

    /// The open fds, by kind. Files whose path starts with `db_file` (SQLite's
    /// database, `-wal` and `-shm`) count as database fds.
    pub fn fds(&self) -> Fds {
        let sockets = tcp_sockets(self.pid);
        let mut f = Fds::default();
        for link in fd_links(self.pid) {
            f.total += 1;
            if let Some(inode) = socket_inode(&link) {
                match sockets.get(&inode) {
                    Some(&(local, _)) if local == self.addr.port() => f.clients += 1,
                    Some(&(_, remote)) if remote == PG_PORT => f.database += 1,
                    _ => {}
                }
            } else if self.db_file.as_deref().is_some_and(|db| link.starts_with(db)) {
                f.database += 1;
            }
        }
        f
    }

    /// Counts files under `path` (an absolute path prefix) as database fds.
    pub fn set_db_file(&mut self, path: &str) {
        self.db_file = Some(path.to_owned());
    }

    /// What each fd points at (`socket:[…]`, a path, `anon_inode:…`), for a report.
    pub fn fd_targets(&self) -> Vec<String> {
        fd_links(self.pid)
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.server.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then the exit status (within 30 s; killed after that).
    pub fn stop(mut self) -> Result<std::process::ExitStatus, String> {
        let _ = Command::new("kill").args(["-TERM", &self.pid.to_string()]).status();
        for _ in 0..300 {
            if let Ok(Some(s)) = self.server.child.try_wait() {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("the server did not exit within 30 s of SIGTERM: {}", self.tail()))
    }
}

/// The local ports of `pid`'s connections to PostgreSQL (its backends'
/// `client_port` in `pg_stat_activity`).
pub fn database_ports_of(pid: u32) -> Vec<i32> {
    let sockets = tcp_sockets(pid);
    socket_inodes(pid)
        .into_iter()
        .filter_map(|inode| sockets.get(&inode))
        .filter(|(_, remote)| *remote == PG_PORT)
        .map(|(local, _)| i32::from(*local))
        .collect()
}

/// What every fd of `pid` links to.
fn fd_links(pid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .collect()
}

/// The inode of a `socket:[N]` link.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The socket inodes of `pid`'s fds.
fn socket_inodes(pid: u32) -> Vec<u64> {
    fd_links(pid).iter().filter_map(|l| socket_inode(l)).collect()
}

/// Every TCP socket in `pid`'s network namespace: inode → (local port, remote port).
fn tcp_sockets(pid: u32) -> HashMap<u64, (u16, u16)> {
    let mut out = HashMap::new();
    for table in ["tcp", "tcp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = |s: &str| s.rsplit_once(':').and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if let (Some(l), Some(r), Some(inode)) =
                (f.get(1).and_then(|s| port(s)), f.get(2).and_then(|s| port(s)), f.get(9).and_then(|s| s.parse().ok()))
                && inode != 0
            {
                out.insert(inode, (l, r));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_sockets() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let me = std::process::id();
        let sockets = tcp_sockets(me);
        let inodes = socket_inodes(me);
        assert!(
            inodes.iter().any(|i| sockets.get(i).is_some_and(|&(local, _)| local == port)),
            "the listener on {port} is among this process's sockets"
        );
    }
}
