//! The progress line on stderr while a task runs: a spinner with elapsed
//! time and the status message on a terminal, plain timestamped lines (no
//! control characters) otherwise.

use conduit_mcp::client::sanitize::one_line;
use conduit_mcp::protocol::tasks::Task;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The progress display of one command.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    last: Mutex<String>,
}

impl Progress {
    /// A spinner when stderr is a terminal, plain lines otherwise.
    pub(crate) fn new() -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Self { bar, start: Instant::now(), last: Mutex::new(String::new()) }
    }

    /// Shows a line (deduplicated: the same text is not repeated).
    pub(crate) fn show(&self, text: String) {
        // Server text (status messages) never reaches the terminal raw, spinner or not.
        let text = one_line(&text).into_owned();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if *last == text {
            return;
        }
        last.clone_from(&text);
        match &self.bar {
            Some(b) => b.set_message(text),
            None => eprintln!("[{:>6.1}s] {text}", self.start.elapsed().as_secs_f64()),
        }
    }

    /// Shows a task's status and message.
    pub(crate) fn task(&self, t: &Task) {
        let msg = t.status_message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
        self.show(format!("{}{msg}", t.status.as_str()));
    }

    /// Runs `f` (a prompt) with the spinner out of the way.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Starts the spinner again after [`finish`](Self::finish) (the next task of `task wait --all`).
    pub(crate) fn restart(&self) {
        if let Some(b) = &self.bar {
            b.reset();
            b.enable_steady_tick(Duration::from_millis(120));
        }
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Removes the spinner.
    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
