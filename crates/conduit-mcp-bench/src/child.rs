//! A server started as a child process on `127.0.0.1:0`: its address read from
//! the `listening on http://ADDR/mcp` line it prints to stderr, the last lines
//! of that stderr kept for error messages, killed when dropped. The harness,
//! the follow driver and the soak drivers start their servers through it.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lines of stderr kept for an error message.
const TAIL_LINES: usize = 30;

/// A running server child.
#[derive(Debug)]
pub struct Listening {
    /// The process.
    pub child: Child,
    /// Its process id.
    pub pid: u32,
    /// Where it accepts connections.
    pub addr: SocketAddr,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Listening {
    /// Spawns `cmd` (stdin and stdout closed, stderr read to its end on a
    /// thread so the server never blocks on a full pipe) and waits up to
    /// `wait` for its address; `what` names it in errors.
    pub fn spawn(mut cmd: Command, what: &str, wait: Duration) -> Result<Self, String> {
        cmd.stdout(Stdio::null());
        Self::spawn_keeping_stdout(cmd, what, wait)
    }

    /// [`spawn`](Self::spawn), but stdout is whatever `cmd` says (`Stdio::piped()`:
    /// the caller takes `child.stdout` to read what the server prints there).
    pub fn spawn_keeping_stdout(mut cmd: Command, what: &str, wait: Duration) -> Result<Self, String> {
        let mut child =
            cmd.stdin(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("cannot start {what}: {e}"))?;
        let pid = child.id();
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = tail.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("listening on http://")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
                }
                if let Ok(mut t) = lines.lock() {
                    t.push_back(line);
                    if t.len() > TAIL_LINES {
                        t.pop_front();
                    }
                }
            }
        });
        let mut p = Self { child, pid, addr: SocketAddr::from(([127, 0, 0, 1], 0)), tail };
        match rx.recv_timeout(wait) {
            Ok(a) => {
                p.addr = a.parse().map_err(|e| format!("{what} printed a bad address {a:?}: {e}"))?;
                Ok(p)
            }
            Err(_) => Err(format!("{what} did not start listening: {}", p.tail())),
        }
    }

    /// The last lines the server wrote to stderr.
    pub fn tail(&self) -> String {
        self.tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join(" | ")).unwrap_or_default()
    }
}
