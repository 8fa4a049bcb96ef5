//! The stable 64-bit hashes vectors are stored under: XXH3-64 (seed 0), a
//! published algorithm whose output does not change between versions or
//! platforms, so a vector written by one process is found by any other.

use xxhash_rust::xxh3::xxh3_64;

/// The hash of an entry's embedded text, `key + "\n" + value` (§15.4).
/// Never 0, which marks "no text" in the views' tables.
pub fn text_hash(key: &str, value: &str, buffer: &mut Vec<u8>) -> u64 {
    buffer.clear();
    buffer.extend_from_slice(key.as_bytes());
    buffer.push(b'\n');
    buffer.extend_from_slice(value.as_bytes());
    xxh3_64(buffer).max(1)
}

/// The hash of a model's name, which tags its vectors.
pub fn model_hash(name: &str) -> u64 {
    xxh3_64(name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_and_cover_key_and_value() {
        let mut buffer = Vec::new();
        // XXH3-64 of "a\nb", as every implementation gives it.
        assert_eq!(text_hash("a", "b", &mut buffer), xxh3_64(b"a\nb"));
        assert_ne!(
            text_hash("a", "b\nc", &mut buffer),
            text_hash("a\nb", "c", &mut buffer).wrapping_add(1)
        );
        assert_ne!(
            text_hash("k", "v1", &mut buffer),
            text_hash("k", "v2", &mut buffer)
        );
        assert_eq!(model_hash(""), 0x2D06_8005_38D3_94C2);
    }
}
