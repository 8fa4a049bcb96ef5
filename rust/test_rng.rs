//! A small deterministic generator for the randomized unit tests, so they
//! need no crate and replay the same cases on every run.

/// xorshift64 from `seed` (not zero): each call gives a number in `0..bound`.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |bound| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    }
}
