//! Rate-limited warnings: a condition that repeats per request (a refused
//! create when the task table is full) logs once per window, with how many
//! times it was seen meanwhile, instead of once per request.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One line per message per this window.
const WINDOW: Duration = Duration::from_secs(10);
/// Distinct messages tracked at once (the table is cleared beyond it).
const KEYS: usize = 256;

/// Per message: when it was last logged, and how often it was suppressed since.
fn table() -> &'static Mutex<HashMap<String, (Instant, u64)>> {
    static T: OnceLock<Mutex<HashMap<String, (Instant, u64)>>> = OnceLock::new();
    T.get_or_init(Mutex::default)
}

/// Whether `message` may be logged now; `Some(n)`: yes, and `n` earlier
/// occurrences were suppressed since it last was.
pub(crate) fn admit(message: &str) -> Option<u64> {
    admit_at(table(), message, Instant::now())
}

fn admit_at(table: &Mutex<HashMap<String, (Instant, u64)>>, message: &str, now: Instant) -> Option<u64> {
    let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((at, suppressed)) = t.get_mut(message) {
        if now.duration_since(*at) < WINDOW {
            *suppressed += 1;
            return None;
        }
        let n = std::mem::take(suppressed);
        *at = now;
        return Some(n);
    }
    if t.len() >= KEYS {
        t.clear();
    }
    t.insert(message.to_owned(), (now, 0));
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_window_with_the_count_of_the_rest() {
        let t = Mutex::default();
        let start = Instant::now();
        assert_eq!(admit_at(&t, "Task limit reached", start), Some(0));
        for i in 1..100 {
            assert_eq!(admit_at(&t, "Task limit reached", start + Duration::from_millis(i)), None);
        }
        assert_eq!(admit_at(&t, "another", start), Some(0), "messages are limited apart");
        assert_eq!(admit_at(&t, "Task limit reached", start + WINDOW), Some(99));
        assert_eq!(admit_at(&t, "Task limit reached", start + WINDOW * 2), Some(0));
    }
}
