//! One shard of the memory store: its records in a compact stored form, and
//! the expiry, unlimited-TTL and lease indexes kept beside them.

use super::IdBuild;
use crate::ext::tasks::store::contract::Owner;
use crate::ext::tasks::store::record::{Lease, TaskFailure, TaskRecord};
use crate::protocol::meta::ClientCapabilities;
use crate::protocol::mrtr::InputRequest;
use crate::protocol::tasks::TaskStatus;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// A task id, stored once per record and shared by its index entries.
pub(super) type Id = Arc<str>;

/// The fields of a record that are empty most of a task's life.
#[derive(Default)]
pub(super) struct Cold {
    pub(super) input_requests: BTreeMap<String, InputRequest>,
    pub(super) issued_keys: BTreeSet<String>,
    pub(super) pending_responses: Map<String, Value>,
    pub(super) input_responses: Map<String, Value>,
    pub(super) result: Option<Value>,
    pub(super) error: Option<TaskFailure>,
    pub(super) tool: Option<String>,
    pub(super) resume_args: Option<Value>,
}

impl Cold {
    pub(super) fn is_empty(&self) -> bool {
        self.input_requests.is_empty()
            && self.issued_keys.is_empty()
            && self.pending_responses.is_empty()
            && self.input_responses.is_empty()
            && self.result.is_none()
            && self.error.is_none()
            && self.tool.is_none()
            && self.resume_args.is_none()
    }
}

/// A [`TaskRecord`] as a shard keeps it: the id only as the map key, the
/// capabilities and lease node shared with other records, cold fields boxed.
pub(super) struct Stored {
    pub(super) owner: Option<String>,
    pub(super) status: TaskStatus,
    pub(super) status_message: Option<String>,
    pub(super) created_at_ms: u64,
    pub(super) last_updated_at_ms: u64,
    pub(super) ttl_ms: Option<u64>,
    pub(super) poll_interval_ms: Option<u64>,
    pub(super) terminal_at_ms: Option<u64>,
    pub(super) version: u64,
    pub(super) client_capabilities: Arc<ClientCapabilities>,
    /// `(node, expires_at_ms)`.
    pub(super) lease: Option<(Arc<str>, u64)>,
    pub(super) cold: Option<Box<Cold>>,
}

impl Stored {
    pub(super) fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    pub(super) fn is_expired(&self, now_ms: u64) -> bool {
        self.ttl_ms.is_some_and(|t| now_ms > self.created_at_ms.saturating_add(t))
    }

    /// Where it sorts among terminal tasks: `(terminal_at_ms, id)`, or
    /// `None` while it is live.
    pub(super) fn ended_key(&self, id: &Id) -> Option<(u64, Id)> {
        self.is_terminal().then(|| (self.terminal_at_ms.unwrap_or(self.last_updated_at_ms), id.clone()))
    }

    pub(super) fn allows(&self, owner: Owner<'_>) -> bool {
        match owner {
            Owner::Any => true,
            Owner::Is(o) => self.owner.as_deref() == o,
        }
    }

    /// The record with id `id` (a copy).
    pub(super) fn to_record(&self, id: &str) -> TaskRecord {
        let mut r = TaskRecord::new(id.to_owned(), self.owner.clone(), self.created_at_ms, self.ttl_ms);
        r.status = self.status;
        r.status_message = self.status_message.clone();
        r.last_updated_at_ms = self.last_updated_at_ms;
        r.poll_interval_ms = self.poll_interval_ms;
        r.terminal_at_ms = self.terminal_at_ms;
        r.version = self.version;
        r.client_capabilities = ClientCapabilities::clone(&self.client_capabilities);
        r.lease = self.lease.as_ref().map(|(node, at)| Lease { node: node.to_string(), expires_at_ms: *at });
        if let Some(c) = &self.cold {
            r.input_requests = c.input_requests.clone();
            r.issued_keys = c.issued_keys.clone();
            r.pending_responses = c.pending_responses.clone();
            r.input_responses = c.input_responses.clone();
            r.result = c.result.clone();
            r.error = c.error.clone();
            r.tool = c.tool.clone();
            r.resume_args = c.resume_args.clone();
        }
        r
    }
}

/// One shard: its records and their indexes, all under one lock.
#[derive(Default)]
pub(super) struct Shard {
    /// The records (boxed: a hash-table slot is two words, the record allocated at its size).
    pub(super) map: HashMap<Id, Box<Stored>, IdBuild>,
    /// The capabilities of the last record stored here, shared by the next equal ones.
    pub(super) last_capabilities: Option<Arc<ClientCapabilities>>,
    /// The lease node of the last leased record stored here, shared likewise.
    pub(super) last_node: Option<Arc<str>>,
    /// `(expires_at_ms, id)` of tasks with a TTL.
    pub(super) expiry: BTreeSet<(u64, Id)>,
    /// `(terminal_at_ms, id)` of terminal tasks with unlimited TTL.
    pub(super) terminal_unlimited: BTreeSet<(u64, Id)>,
    /// Live (non-terminal) tasks whose work holds a lease (only `spawn`ed work).
    pub(super) leased: HashSet<Id, IdBuild>,
}

impl Shard {
    /// `record` in stored form (the id is the caller's to keep).
    pub(super) fn store(&mut self, record: TaskRecord) -> Stored {
        let caps = match &self.last_capabilities {
            Some(c) if **c == record.client_capabilities => c.clone(),
            _ => {
                let c = Arc::new(record.client_capabilities);
                self.last_capabilities = Some(c.clone());
                c
            }
        };
        let lease = record.lease.map(|l| {
            let node = match &self.last_node {
                Some(n) if **n == *l.node => n.clone(),
                _ => {
                    let n: Arc<str> = Arc::from(l.node);
                    self.last_node = Some(n.clone());
                    n
                }
            };
            (node, l.expires_at_ms)
        });
        let cold = Cold {
            input_requests: record.input_requests,
            issued_keys: record.issued_keys,
            pending_responses: record.pending_responses,
            input_responses: record.input_responses,
            result: record.result,
            error: record.error,
            tool: record.tool,
            resume_args: record.resume_args,
        };
        Stored {
            owner: record.owner,
            status: record.status,
            status_message: record.status_message,
            created_at_ms: record.created_at_ms,
            last_updated_at_ms: record.last_updated_at_ms,
            ttl_ms: record.ttl_ms,
            poll_interval_ms: record.poll_interval_ms,
            terminal_at_ms: record.terminal_at_ms,
            version: record.version,
            client_capabilities: caps,
            lease,
            cold: (!cold.is_empty()).then(|| Box::new(cold)),
        }
    }

    /// The stored key equal to `id` (to share it with an index).
    pub(super) fn key(&self, id: &str) -> Option<Id> {
        self.map.get_key_value(id).map(|(k, _)| k.clone())
    }

    /// Takes record `id` out with its index entries (the caller drops it after unlocking).
    pub(super) fn take(&mut self, id: &str) -> Option<(Id, Box<Stored>)> {
        let (key, stored) = self.map.remove_entry(id)?;
        if let Some(ttl) = stored.ttl_ms {
            self.expiry.remove(&(stored.created_at_ms.saturating_add(ttl), key.clone()));
        }
        if let Some(at) = stored.terminal_at_ms {
            self.terminal_unlimited.remove(&(at, key.clone()));
        }
        self.leased.remove(&key);
        Some((key, stored))
    }

    /// Up to `limit` records expired before `now`, or terminal with unlimited
    /// TTL since before `cutoff`, taken out (the caller drops them after
    /// unlocking). Returns whether more may remain.
    pub(super) fn take_expired(
        &mut self,
        now: u64,
        cutoff: u64,
        limit: usize,
        out: &mut Vec<(Id, Box<Stored>)>,
    ) -> bool {
        for (index, bound) in [(&mut self.expiry, now), (&mut self.terminal_unlimited, cutoff)] {
            while out.len() < limit {
                match index.first() {
                    Some((at, _)) if *at < bound => {}
                    _ => break,
                }
                let Some((_, id)) = index.pop_first() else { break };
                self.leased.remove(&id);
                if let Some(r) = self.map.remove(&id) {
                    out.push((id, r));
                }
            }
            if out.len() >= limit {
                return true;
            }
        }
        false
    }
}
