//! Sets of entry ids (the dense `u32` ids of the render index), used by the
//! graph walks and the renderer.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for `u32` ids: ids are not attacker-chosen, and the iteration
/// order of a set never reaches any output, so a cheap mix suffices.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

/// murmur3's 64-bit finaliser: spreads every input bit over the whole word,
/// so the low bits a hash table indexes by are well mixed.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        mix(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 << 32) | u64::from(n);
    }
}

pub type IdBuildHasher = BuildHasherDefault<IdHasher>;
pub type IdSet = HashSet<u32, IdBuildHasher>;
