use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::write::write_image;
use super::{Base, Image, Problem, Stamp, path_for, read_stamp, tag};
use crate::entry::Entry;

fn entries(count: usize) -> Vec<Arc<Entry>> {
    let mut all: Vec<Arc<Entry>> = (0..count)
        .map(|i| {
            let previous = format!("k{:04}", i.wrapping_sub(1));
            let refs: &[&str] = if i > 0 { &[&previous, "missing"] } else { &[] };
            let mut entry = (*crate::testing::entry(
                &format!("k{i:04}"),
                ["note", "result", "progress"][i % 3],
                &format!("Value {i} — é {}", "x".repeat(i % 7)),
                1_000 + i as i64,
                refs,
            ))
            .clone();
            entry.namespace = if i % 4 == 0 { "ns" } else { "" }.into();
            entry.created_at = i as i64;
            Arc::new(entry)
        })
        .collect();
    all.sort_by(|a, b| a.key.cmp(&b.key));
    all
}

fn stamp(count: usize) -> Stamp {
    Stamp {
        store_id: vec![7; 16],
        sequence: 42,
        count: count as u64,
        position: Some([9, 10, 11]),
        token: 0x5eed,
    }
}

fn written(dir: &Path, count: usize) -> (PathBuf, Vec<Arc<Entry>>) {
    let store = dir.join("memory.redb");
    let all = entries(count);
    let refs: Vec<&Arc<Entry>> = all.iter().collect();
    write_image(
        &store,
        &stamp(count),
        5_000,
        &refs,
        vec![(tag(b"TEST"), b"view bytes".to_vec())],
    )
    .unwrap();
    (store, all)
}

#[test]
fn an_image_gives_back_every_entry_and_its_stamp() {
    let dir = tempfile::tempdir().unwrap();
    let (store, all) = written(dir.path(), 300);
    let image = Image::open(&path_for(&store)).unwrap();
    assert_eq!(image.stamp(), &stamp(300));
    assert_eq!(read_stamp(&path_for(&store)).unwrap(), stamp(300));
    assert_eq!(image.clock(), 5_000);
    assert_eq!(image.section(tag(b"TEST")), Some(&b"view bytes"[..]));
    let base = Base::new(image);
    for (i, entry) in all.iter().enumerate() {
        assert_eq!(**base.entry(i), **entry);
        assert_eq!(base.image().find(&entry.key), Some(i));
        assert_eq!(base.image().updated_at(i), entry.updated_at);
    }
    assert_eq!(base.image().find("k"), None);
    assert_eq!(base.image().lower_bound("k0002"), 2);
    assert_eq!(base.image().lower_bound("zzz"), 300);
    assert!(!store.with_extension("redb.image.new").exists());
}

#[test]
fn an_empty_store_has_an_image_too() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = written(dir.path(), 0);
    let image = Image::open(&path_for(&store)).unwrap();
    assert!(image.is_empty());
    assert_eq!(image.find("a"), None);
}

#[test]
fn a_flipped_bit_anywhere_or_a_cut_is_damage_and_no_file_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = written(dir.path(), 50);
    let path = path_for(&store);
    let good = std::fs::read(&path).unwrap();
    // Every byte of the header, and a sample of every other section.
    let positions = (0..512).chain((512..good.len()).step_by(7));
    for at in positions {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        match Image::open(&path) {
            Err(Problem::Damaged(_)) => {}
            Ok(image) => {
                // Padding between sections is covered by no checksum; it
                // must then give back the same entries.
                assert!(at >= 512, "byte {at}");
                assert_eq!(image.len(), 50);
            }
            Err(other) => panic!("byte {at}: {other:?}"),
        }
    }
    for cut in [0, 10, 511, 512, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..cut]).unwrap();
        assert!(
            matches!(Image::open(&path), Err(Problem::Damaged(_))),
            "cut at {cut}"
        );
    }
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(Image::open(&path), Err(Problem::Missing)));
}

#[test]
fn a_symbolic_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = written(dir.path(), 5);
    let target = dir.path().join("elsewhere");
    std::fs::rename(path_for(&store), &target).unwrap();
    std::os::unix::fs::symlink(&target, path_for(&store)).unwrap();
    assert!(matches!(
        Image::open(&path_for(&store)),
        Err(Problem::Missing)
    ));
}

#[test]
fn the_first_failing_section_is_named_on_one_thread_and_on_two() {
    for count in [3, 400] {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = written(dir.path(), count);
        let path = path_for(&store);
        let good = std::fs::read(&path).unwrap();
        let (_, _, _, sections) = super::parse_header(&good).unwrap();
        let parallel = good.len() >= super::PARALLEL_CHECK_BYTES;
        assert_eq!(parallel, count == 400, "{} bytes", good.len());
        let named = |section: &super::Section| {
            String::from_utf8_lossy(&section.tag.to_le_bytes()).into_owned()
        };
        // Damage in the last section and in the first: the first is named.
        let (first, last) = (&sections[0], &sections[sections.len() - 1]);
        let mut bad = good.clone();
        bad[last.start] ^= 1;
        bad[first.start] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        match Image::open(&path) {
            Err(Problem::Damaged(why)) => assert!(why.contains(&named(first)), "{why}"),
            _ => panic!("{count} entries: damage not found"),
        }
        // Damage in the last section alone is found too.
        let mut bad = good.clone();
        bad[last.start + last.len - 1] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        match Image::open(&path) {
            Err(Problem::Damaged(why)) => assert!(why.contains(&named(last)), "{why}"),
            _ => panic!("{count} entries: damage in the last section not found"),
        }
    }
}

#[test]
fn an_image_of_another_version_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = written(dir.path(), 5);
    let path = path_for(&store);
    let mut bytes = std::fs::read(&path).unwrap();
    // Another build tag, with a header checksum that holds.
    let other = super::build_tag().wrapping_add(1);
    bytes[super::BUILD_AT..super::BUILD_AT + 4].copy_from_slice(&other.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..super::CRC_AT]);
    bytes[super::CRC_AT..super::CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    match Image::open(&path) {
        Err(Problem::Damaged(why)) => assert!(why.contains("another version"), "{why}"),
        _ => panic!("an image of another version was read"),
    }
}
