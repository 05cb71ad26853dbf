//! A set of 128-bit digests in little more than their 16 bytes each, which
//! grows a few hundred bytes at a time: ingest's known trajectory ids, which
//! grow with the lake. A hash set of them cost up to twice that at its load
//! factor, and held its old table and the new one together each time it
//! grew (bench/README.md).

/// Buckets by a digest's first 16 bits: at ten times the reference corpus
/// (4M ids) about 60 digests a bucket, so an insert moves a kilobyte.
const BUCKET_BITS: u32 = 16;

/// The digests sorted within buckets chosen by their leading bits (sha256
/// digests spread evenly over them). Each bucket grows by an eighth, so
/// its spare room stays small.
#[derive(Debug)]
pub(crate) struct DigestSet {
    buckets: Vec<Vec<u128>>,
}

impl Default for DigestSet {
    fn default() -> Self {
        DigestSet {
            buckets: vec![Vec::new(); 1 << BUCKET_BITS],
        }
    }
}

impl DigestSet {
    fn bucket(digest: u128) -> usize {
        (digest >> (128 - BUCKET_BITS)) as usize
    }

    #[cfg(test)]
    fn contains(&self, digest: u128) -> bool {
        self.buckets[Self::bucket(digest)]
            .binary_search(&digest)
            .is_ok()
    }

    /// Add `digest`; false where the set held it.
    pub(crate) fn insert(&mut self, digest: u128) -> bool {
        let bucket = &mut self.buckets[Self::bucket(digest)];
        let Err(at) = bucket.binary_search(&digest) else {
            return false;
        };
        if bucket.len() == bucket.capacity() {
            bucket.reserve_exact((bucket.len() / 8).max(4));
        }
        bucket.insert(at, digest);
        true
    }

    /// Take `digest` out; false where the set did not hold it.
    pub(crate) fn remove(&mut self, digest: u128) -> bool {
        let bucket = &mut self.buckets[Self::bucket(digest)];
        let Ok(at) = bucket.binary_search(&digest) else {
            return false;
        };
        bucket.remove(at);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Digests spread over the whole range as sha256 prefixes are, from a
    /// fixed seed (splitmix64, twice for 128 bits).
    fn digests(seed: u64, n: usize) -> Vec<u128> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        (0..n)
            .map(|_| (u128::from(next()) << 64) | u128::from(next()))
            .collect()
    }

    #[test]
    fn holds_what_a_hash_set_holds() {
        let ids = digests(7, 20_000);
        let mut set = DigestSet::default();
        let mut reference = HashSet::new();
        // Each id twice: the second insert finds it.
        for round in 0..2 {
            for &id in &ids {
                assert_eq!(set.insert(id), reference.insert(id), "round {round}");
            }
        }
        for &id in ids.iter().step_by(3) {
            assert_eq!(set.remove(id), reference.remove(&id));
            assert!(!set.remove(id), "removed once");
        }
        let others = digests(8, 1000);
        for id in ids.iter().chain(&others) {
            assert_eq!(set.contains(*id), reference.contains(id));
        }
    }

    #[test]
    fn digests_that_share_a_bucket_stay_apart_and_in_order() {
        // One bucket: the same leading bits, the rest counting down.
        let ids: Vec<u128> = (0..1000u128).rev().map(|i| (7 << 112) | i).collect();
        let mut set = DigestSet::default();
        for &id in &ids {
            assert!(set.insert(id));
        }
        let bucket = &set.buckets[7];
        assert_eq!(bucket.len(), ids.len());
        assert!(bucket.windows(2).all(|w| w[0] < w[1]));
        assert!(bucket.capacity() < ids.len() * 5 / 4, "spare room: {}", bucket.capacity());
        assert!(set.contains(7 << 112) && !set.contains(8 << 112));
    }
}
