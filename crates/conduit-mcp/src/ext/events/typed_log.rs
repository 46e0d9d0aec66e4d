//! [`TypedLog`]: the occurrences of one application event name, kept for
//! replay, shared by every generation of its type offered while each change
//! was additive (`evolution.rs`). One log, one epoch: positions, cursors,
//! live streams and webhook subscriptions carry over from one generation to
//! the next. Each occurrence is matched by the generation that published it,
//! against a subscription's arguments read as that generation's.

use super::typed::{Audience, TypedEvent};
use crate::seq_log::{Read, ReadFrom, SeqLog};
use serde_json::{Map, Value};
use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::sync::{Arc, PoisonError, RwLock};

/// A value of one generation's Rust types, seen without them.
pub(crate) type Erased = Box<dyn Any + Send + Sync>;

/// What the log needs of one generation of a [`TypedEvent`]: its arguments
/// parsed, and its match.
pub(crate) trait Generation: Send + Sync {
    /// `arguments` as this generation's `Arguments`, if they parse.
    fn parse(&self, arguments: &Map<String, Value>) -> Option<Erased>;
    /// [`TypedEvent::matches`] over values of this generation (`false` for any other's).
    fn matches(&self, arguments: &(dyn Any + Send + Sync), payload: &(dyn Any + Send + Sync)) -> bool;
}

/// The [`Generation`] of `E`.
struct GenerationOf<E>(PhantomData<fn() -> E>);

impl<E: TypedEvent> Generation for GenerationOf<E> {
    fn parse(&self, arguments: &Map<String, Value>) -> Option<Erased> {
        let parsed: E::Arguments = serde_json::from_value(Value::Object(arguments.clone())).ok()?;
        Some(Box::new(parsed))
    }

    fn matches(&self, arguments: &(dyn Any + Send + Sync), payload: &(dyn Any + Send + Sync)) -> bool {
        match (arguments.downcast_ref::<E::Arguments>(), payload.downcast_ref::<E::Payload>()) {
            (Some(a), Some(p)) => E::matches(a, p),
            _ => false,
        }
    }
}

/// One published occurrence, as kept for replay.
pub(crate) struct Published {
    /// The payload as its generation's `Payload`.
    pub(crate) payload: Erased,
    /// Which generation published it (an index into the log's generations).
    pub(crate) generation: usize,
    pub(crate) data: Value,
    pub(crate) audience: Audience,
    pub(crate) event_id: Option<String>,
}

/// A subscription's arguments, read as each generation's.
pub(crate) struct TypedFilter {
    arguments: Map<String, Value>,
    /// Per generation known when it was made; `None` where they do not parse.
    parsed: Vec<Option<Erased>>,
}

/// The log of one event name, and the generations of its type.
pub(crate) struct TypedLog {
    log: SeqLog<Published>,
    epoch: u64,
    /// Each generation once, by its type's id, in the order first offered.
    generations: RwLock<Vec<(TypeId, Arc<dyn Generation>)>>,
}

impl TypedLog {
    /// An empty log keeping `retained` (entries, bytes), under a fresh epoch.
    pub(crate) fn new(retained: (usize, usize)) -> Self {
        Self { log: SeqLog::new(retained.0, retained.1), epoch: rand::random(), generations: RwLock::default() }
    }

    /// The index of `E`'s generation, added unless `E` was offered on this log before
    /// (so offering one type again and again adds nothing).
    pub(crate) fn generation_of<E: TypedEvent>(&self) -> usize {
        let id = TypeId::of::<E>();
        let mut g = self.generations.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = g.iter().position(|(t, _)| *t == id) {
            return i;
        }
        g.push((id, Arc::new(GenerationOf::<E>(PhantomData))));
        g.len() - 1
    }

    fn generations(&self) -> Vec<Arc<dyn Generation>> {
        self.generations.read().unwrap_or_else(PoisonError::into_inner).iter().map(|(_, g)| g.clone()).collect()
    }

    /// Which log its positions are in.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The positioned log.
    pub(crate) fn log(&self) -> &SeqLog<Published> {
        &self.log
    }

    /// `arguments` (already parsed by the generation asking) read as every generation's.
    pub(crate) fn filter(&self, arguments: Map<String, Value>) -> TypedFilter {
        let parsed = self.generations().iter().map(|g| g.parse(&arguments)).collect();
        TypedFilter { arguments, parsed }
    }

    /// The occurrences after `from.after` that `owner` may see and `filter` keeps.
    pub(crate) fn read(&self, owner: Option<&str>, filter: &TypedFilter, from: ReadFrom) -> Read<Published> {
        let generations = self.generations();
        self.log.read(from, |p| {
            if !p.audience.admits(owner) {
                return false;
            }
            let Some(g) = generations.get(p.generation) else { return false };
            match filter.parsed.get(p.generation) {
                Some(Some(args)) => g.matches(args.as_ref(), p.payload.as_ref()),
                Some(None) => false,
                // A generation offered after the filter was made (a stream about to move to it).
                None => g.parse(&filter.arguments).is_some_and(|args| g.matches(args.as_ref(), p.payload.as_ref())),
            }
        })
    }
}
