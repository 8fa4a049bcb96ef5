//! Random numbers without a dependency, for identities (store ids, ring ids)
//! and for spreading out retries; never for anything secret.

use std::time::Instant;

/// A random 64-bit value: std's `RandomState` is seeded from the operating
/// system per process and per call; the clock and the process id are mixed
/// in so that two processes started together still differ.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

#[cfg(test)]
mod tests {
    #[test]
    fn values_differ() {
        let values: std::collections::BTreeSet<u64> =
            (0..64).map(|_| super::random_u64()).collect();
        assert_eq!(values.len(), 64);
    }
}
