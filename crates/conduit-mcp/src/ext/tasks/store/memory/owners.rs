//! Each owner's tasks as the caps and bounds count them: how many are live
//! (the per-principal cap), and its terminal ones oldest first with their
//! bytes (the terminal bound). Owner-less tasks are not counted here.

use super::shard::Id;
use crate::ext::tasks::store::contract::TerminalBound;
use std::collections::{BTreeMap, HashMap};

/// Where a terminal task sorts: `(terminal_at_ms, id)`.
pub(super) type EndedKey = (u64, Id);

/// One owner's tally.
#[derive(Default)]
struct Tally {
    /// Live tasks, counted from the moment a create reserves its slot.
    live: usize,
    /// Terminal tasks, oldest first, with their bytes: by when they ended,
    /// then (several in one millisecond) in the order they were counted.
    ended: BTreeMap<(u64, u64, Id), usize>,
    /// Where each of `ended` was counted, by its [`EndedKey`].
    counted: HashMap<EndedKey, u64>,
    /// Terminal tasks counted so far (the next one's place).
    ends: u64,
    /// The sum of `ended`'s bytes.
    ended_bytes: usize,
}

/// Every owner's tally (an owner with nothing counted has no entry).
#[derive(Default)]
pub(super) struct Owners(HashMap<String, Tally>);

impl Owners {
    /// Admits a new task of `owner` when it holds fewer than `max` live
    /// tasks; a live one (`live`) then takes its slot at once. Whether admitted.
    pub(super) fn reserve(&mut self, owner: &str, max: Option<usize>, live: bool) -> bool {
        let held = self.0.get(owner).map_or(0, |t| t.live);
        if max.is_some_and(|m| held >= m) {
            return false;
        }
        if live {
            self.0.entry(owner.to_owned()).or_default().live += 1;
        }
        true
    }

    /// Gives back the slot [`reserve`](Self::reserve) took (the create did not happen).
    pub(super) fn unreserve(&mut self, owner: &str, live: bool) {
        if live {
            self.drop_live(owner);
        }
    }

    /// A task of `owner` is terminal at `key`, its record `bytes` long: no
    /// longer live when it was (`was_live`), now counted as terminal.
    pub(super) fn ended(&mut self, owner: &str, key: EndedKey, bytes: usize, was_live: bool) {
        let tally = self.0.entry(owner.to_owned()).or_default();
        if was_live {
            tally.live = tally.live.saturating_sub(1);
        }
        if tally.counted.contains_key(&key) {
            return;
        }
        let n = tally.ends;
        tally.ends += 1;
        tally.ended.insert((key.0, n, key.1.clone()), bytes);
        tally.counted.insert(key, n);
        tally.ended_bytes += bytes;
    }

    /// A task of `owner` was removed: live, or terminal at `key`. A terminal
    /// one already taken out of the tally (by [`trim`](Self::trim)) counts nothing.
    pub(super) fn gone(&mut self, owner: &str, ended_at: Option<EndedKey>) {
        match ended_at {
            None => self.drop_live(owner),
            Some(key) => {
                if let Some(tally) = self.0.get_mut(owner)
                    && let Some(n) = tally.counted.remove(&key)
                    && let Some(bytes) = tally.ended.remove(&(key.0, n, key.1))
                {
                    tally.ended_bytes -= bytes;
                }
                self.prune(owner);
            }
        }
    }

    /// The id of `owner`'s oldest terminal task.
    pub(super) fn oldest_ended(&self, owner: &str) -> Option<Id> {
        self.0.get(owner)?.ended.first_key_value().map(|((_, _, id), _)| id.clone())
    }

    /// Takes out of the tally `owner`'s oldest terminal tasks until the rest
    /// are within `bound`, keeping the newest; their ids, for the caller to
    /// remove from the shards.
    pub(super) fn trim(&mut self, owner: &str, bound: TerminalBound) -> Vec<Id> {
        let mut out = Vec::new();
        if let Some(tally) = self.0.get_mut(owner) {
            while tally.ended.len() > 1 && bound.exceeded_by(tally.ended.len(), tally.ended_bytes) {
                let Some(((at, _, id), bytes)) = tally.ended.pop_first() else { break };
                tally.counted.remove(&(at, id.clone()));
                tally.ended_bytes -= bytes;
                out.push(id);
            }
        }
        self.prune(owner);
        out
    }

    fn drop_live(&mut self, owner: &str) {
        if let Some(tally) = self.0.get_mut(owner) {
            tally.live = tally.live.saturating_sub(1);
        }
        self.prune(owner);
    }

    fn prune(&mut self, owner: &str) {
        if self.0.get(owner).is_some_and(|t| t.live == 0 && t.ended.is_empty()) {
            self.0.remove(owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks that end in the same millisecond go in the order they ended,
    /// whatever their ids; one taken out early is no longer counted.
    #[test]
    fn ends_in_one_millisecond_go_in_the_order_they_came() {
        let mut owners = Owners::default();
        let ids: Vec<Id> = ["zz", "mm", "aa"].into_iter().map(Id::from).collect();
        for id in &ids {
            owners.reserve("alice", None, true);
            owners.ended("alice", (7, id.clone()), 100, true);
        }
        assert_eq!(owners.oldest_ended("alice").as_deref(), Some("zz"));
        assert_eq!(owners.trim("alice", TerminalBound::new(Some(2), None)), [ids[0].clone()]);
        owners.gone("alice", Some((7, ids[1].clone())));
        assert_eq!(owners.oldest_ended("alice").as_deref(), Some("aa"));
        assert!(owners.trim("alice", TerminalBound::new(None, Some(100))).is_empty(), "100 bytes left, within");
    }
}
