//! Scope hierarchies: a broader scope implies narrower ones (MCP 2026-07-28
//! requires servers to account for them when deciding whether scopes suffice).

use std::collections::{BTreeMap, BTreeSet};

/// Broader scope → the scopes it implies directly; expanded transitively.
#[derive(Debug, Clone, Default)]
pub(super) struct ScopeHierarchy {
    implies: BTreeMap<String, Vec<String>>,
}

impl ScopeHierarchy {
    pub(super) fn new(implies: &BTreeMap<String, Vec<String>>) -> Self {
        Self { implies: implies.clone() }
    }

    /// Adds every scope `granted` implies, directly or through others (cycles are harmless).
    pub(super) fn expand(&self, granted: &mut BTreeSet<String>) {
        if self.implies.is_empty() {
            return;
        }
        let mut todo: Vec<String> = granted.iter().cloned().collect();
        while let Some(s) = todo.pop() {
            for narrower in self.implies.get(&s).into_iter().flatten() {
                if granted.insert(narrower.clone()) {
                    todo.push(narrower.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_transitively_and_survives_cycles() {
        let mut m = BTreeMap::new();
        m.insert("admin".to_owned(), vec!["deploy".to_owned(), "write".to_owned()]);
        m.insert("write".to_owned(), vec!["read".to_owned()]);
        m.insert("read".to_owned(), vec!["write".to_owned()]);
        let h = ScopeHierarchy::new(&m);
        let mut s: BTreeSet<String> = ["admin".to_owned()].into();
        h.expand(&mut s);
        assert_eq!(s.into_iter().collect::<Vec<_>>(), ["admin", "deploy", "read", "write"]);
        let mut s: BTreeSet<String> = ["deploy".to_owned()].into();
        h.expand(&mut s);
        assert_eq!(s.len(), 1, "a narrower scope implies nothing broader");
    }
}
