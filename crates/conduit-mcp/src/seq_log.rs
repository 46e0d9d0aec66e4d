//! [`SeqLog`]: an in-memory log whose entries get increasing positions
//! (1, 2, 3, …), bounded in bytes and in entries (the oldest go first), and
//! readable from any position with a filter. A reader whose position was
//! evicted is told so (`truncated`) and continues at the oldest entry kept.
//! Readers wait for new entries on a `watch` of the last position.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::watch;

/// One entry: its position, when it was appended (epoch ms), what it weighs.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) seq: u64,
    pub(crate) at_ms: u64,
    pub(crate) bytes: usize,
    pub(crate) item: Arc<T>,
}

impl<T> Clone for Entry<T> {
    fn clone(&self) -> Self {
        Self { seq: self.seq, at_ms: self.at_ms, bytes: self.bytes, item: self.item.clone() }
    }
}

/// What one read found.
#[derive(Debug)]
pub(crate) struct Read<T> {
    /// The entries kept by the filter, oldest first.
    pub(crate) entries: Vec<Entry<T>>,
    /// The position read through: the next read starts after it.
    pub(crate) through: u64,
    /// The read started later than asked (entries after `after` were evicted,
    /// or skipped by the age floor, or `after` lies past the last position).
    pub(crate) truncated: bool,
    /// The read stopped at its count or byte limit before the end.
    pub(crate) more: bool,
}

/// Where a read starts and how much it may return.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadFrom {
    /// The position after which to read.
    pub(crate) after: u64,
    /// Skip entries appended before this time (epoch ms).
    pub(crate) floor_ms: Option<u64>,
    /// Most entries returned.
    pub(crate) max_entries: usize,
    /// Most bytes returned (at least one entry is, whatever it weighs).
    pub(crate) max_bytes: usize,
}

struct State<T> {
    entries: VecDeque<Entry<T>>,
    bytes: usize,
    /// The last position assigned (0: none yet).
    last: u64,
    /// The highest position evicted (0: none).
    evicted_through: u64,
}

/// A bounded, positioned in-memory log.
pub(crate) struct SeqLog<T> {
    state: Mutex<State<T>>,
    head: watch::Sender<u64>,
    max_bytes: usize,
    max_entries: usize,
}

impl<T> std::fmt::Debug for SeqLog<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeqLog").field("max_bytes", &self.max_bytes).finish_non_exhaustive()
    }
}

impl<T> SeqLog<T> {
    /// An empty log keeping at most `max_entries` entries and `max_bytes` bytes.
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> Self {
        let state = State { entries: VecDeque::new(), bytes: 0, last: 0, evicted_through: 0 };
        Self { state: Mutex::new(state), head: watch::Sender::new(0), max_bytes, max_entries: max_entries.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `item` (weighing `bytes`, appended at `at_ms`), evicting the
    /// oldest entries past the bounds and passing each to `evicted`; returns its position.
    pub(crate) fn append_with(&self, at_ms: u64, bytes: usize, item: T, mut evicted: impl FnMut(&Entry<T>)) -> u64 {
        let seq = {
            let mut s = self.lock();
            s.last += 1;
            let seq = s.last;
            s.entries.push_back(Entry { seq, at_ms, bytes, item: Arc::new(item) });
            s.bytes += bytes;
            while s.entries.len() > self.max_entries || (s.bytes > self.max_bytes && s.entries.len() > 1) {
                let Some(old) = s.entries.pop_front() else { break };
                s.bytes -= old.bytes;
                s.evicted_through = old.seq;
                evicted(&old);
            }
            seq
        };
        self.head.send_replace(seq);
        seq
    }

    /// Appends `item`; returns its position.
    pub(crate) fn append(&self, at_ms: u64, bytes: usize, item: T) -> u64 {
        self.append_with(at_ms, bytes, item, |_| {})
    }

    /// The last position assigned (0 before the first append).
    pub(crate) fn head(&self) -> u64 {
        self.lock().last
    }

    /// A receiver woken at every append.
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.head.subscribe()
    }

    /// The entries after `from.after` that `keep` accepts, within the limits.
    pub(crate) fn read(&self, from: ReadFrom, mut keep: impl FnMut(&T) -> bool) -> Read<T> {
        let s = self.lock();
        let mut after = from.after;
        let mut truncated = false;
        if after > s.last {
            // A position this log never gave (another process's): start from now.
            return Read { entries: Vec::new(), through: s.last, truncated: true, more: false };
        }
        if after < s.evicted_through {
            truncated = true;
            after = s.evicted_through;
        }
        let start = s.entries.partition_point(|e| e.seq <= after);
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let mut through = s.last;
        let mut more = false;
        for e in s.entries.range(start..) {
            if !keep(&e.item) {
                continue;
            }
            if from.floor_ms.is_some_and(|floor| e.at_ms < floor) {
                truncated = true;
                continue;
            }
            if out.len() >= from.max_entries || (!out.is_empty() && bytes + e.bytes > from.max_bytes) {
                through = out.last().map_or(after, |l: &Entry<T>| l.seq);
                more = true;
                break;
            }
            bytes += e.bytes;
            out.push(e.clone());
        }
        Read { entries: out, through, truncated, more }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(after: u64) -> ReadFrom {
        ReadFrom { after, floor_ms: None, max_entries: 100, max_bytes: usize::MAX }
    }

    #[test]
    fn positions_grow_and_a_read_continues_after_its_position() {
        let log = SeqLog::new(10, 1000);
        assert_eq!(log.append(1, 1, "a"), 1);
        assert_eq!(log.append(2, 1, "b"), 2);
        let r = log.read(all(1), |_| true);
        assert_eq!(r.entries.iter().map(|e| *e.item).collect::<Vec<_>>(), ["b"]);
        assert_eq!((r.through, r.truncated, r.more), (2, false, false));
        let r = log.read(all(2), |_| true);
        assert!(r.entries.is_empty());
        assert_eq!(r.through, 2);
    }

    #[test]
    fn eviction_by_bytes_and_count_truncates_an_old_reader() {
        let log = SeqLog::new(3, 10);
        for i in 0..5 {
            log.append(i, 1, i);
        }
        let r = log.read(all(0), |_| true);
        assert!(r.truncated);
        assert_eq!(r.entries.iter().map(|e| *e.item).collect::<Vec<_>>(), [2, 3, 4]);
        let big = SeqLog::new(100, 10);
        let mut gone = Vec::new();
        for i in 0..4u64 {
            big.append_with(i, 4, i, |e| gone.push(*e.item));
        }
        assert_eq!(gone, [0, 1]);
        assert!(big.read(all(1), |_| true).truncated);
        assert!(!big.read(all(2), |_| true).truncated);
    }

    #[test]
    fn limits_filter_floor_and_a_foreign_position() {
        let log = SeqLog::new(100, 1000);
        for i in 1..=6u64 {
            log.append(i * 10, 5, i);
        }
        let r = log.read(ReadFrom { after: 0, floor_ms: None, max_entries: 2, max_bytes: 1000 }, |i| i % 2 == 0);
        assert_eq!(r.entries.iter().map(|e| *e.item).collect::<Vec<_>>(), [2, 4]);
        assert_eq!((r.through, r.more), (4, true));
        let r = log.read(ReadFrom { after: 0, floor_ms: None, max_entries: 9, max_bytes: 7 }, |_| true);
        assert_eq!((r.entries.len(), r.through, r.more), (1, 1, true));
        let r = log.read(ReadFrom { after: 0, floor_ms: Some(35), max_entries: 9, max_bytes: 1000 }, |_| true);
        assert_eq!(r.entries.iter().map(|e| *e.item).collect::<Vec<_>>(), [4, 5, 6]);
        assert!(r.truncated);
        let r = log.read(all(99), |_| true);
        assert!(r.truncated && r.entries.is_empty());
        assert_eq!(r.through, 6);
    }
}
