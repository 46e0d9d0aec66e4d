//! The hasher of the memory store's maps, keyed by task id.

use std::hash::{BuildHasherDefault, Hasher};

/// A small multiply-rotate hasher for the shard maps.
///
/// Not keyed: fine here because every stored key is a server-generated random
/// id, so nobody can choose keys that collide (a lookup of a client-supplied id
/// never inserts).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K).rotate_left(23);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Spread every input bit over the high bits (hashbrown's tags) and the low ones (its buckets).
        let h = (self.0 ^ (self.0 >> 29)).wrapping_mul(K);
        h ^ (h >> 32)
    }
}

/// Builds [`IdHasher`]s (for maps keyed by task id).
pub(crate) type IdBuild = BuildHasherDefault<IdHasher>;
