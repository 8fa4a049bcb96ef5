//! The image beside a store file (`store/image/`): written when a lease
//! ends, used by a new mirror when it matches, ignored when it does not,
//! and never changing what a call returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use membolt::entry::Entry;
use membolt::store::image::{self, MIN_ENTRIES};
use membolt::store::{DEFAULT_BUSY_TIMEOUT, Store, release_all_leases};
use membolt::views::ranked_search::ranked_search;
use membolt::views::render::render;
use membolt::views::search::{SearchIndex, search, search_ranked};

const COUNT: usize = MIN_ENTRIES + 500;

fn entry(i: usize, round: usize) -> Entry {
    let words = ["alpha", "beta", "gamma", "delta", "Épée", "timeout"];
    let value = format!(
        "value {i} {} {} round {round}",
        words[i % words.len()],
        words[(i / 7) % words.len()]
    );
    let parent = format!("key:{:05}", i / 2);
    let refs: &[&str] = if i > 0 { &[&parent] } else { &[] };
    Entry {
        namespace: if i.is_multiple_of(5) { "ns" } else { "" }.into(),
        created_at: i as i64,
        ..(*membolt::testing::entry(
            &format!("key:{i:05}"),
            ["note", "result", "progress"][i % 3],
            &value,
            10_000 + i as i64 + round as i64,
            refs,
        ))
        .clone()
    }
}

/// A store of `COUNT` entries, closed (its image written).
fn written_store(dir: &Path) -> PathBuf {
    membolt::views::register_image_sections();
    let path = dir.join("memory.redb");
    let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
    store
        .put_exact((0..COUNT).map(|i| entry(i, 0)).collect())
        .unwrap();
    store.close();
    release_all_leases();
    path
}

/// A copy of the store and its companions in a new directory, so that a
/// new handle (not sharing this process's mirror) opens it.
fn copy(path: &Path, to: &Path, with_image: bool) -> PathBuf {
    let copy = to.join("memory.redb");
    std::fs::copy(path, &copy).unwrap();
    for suffix in [".sync", ".journal"] {
        let companion = PathBuf::from(format!("{}{suffix}", path.display()));
        if companion.exists() {
            std::fs::copy(&companion, format!("{}{suffix}", copy.display())).unwrap();
        }
    }
    if with_image {
        std::fs::copy(image::path_for(path), image::path_for(&copy)).unwrap();
    }
    copy
}

/// A ranked search's answer: how many qualify, the first with scores.
type Ranked = (usize, Vec<(Arc<Entry>, f64)>);

struct Answers {
    entries: Vec<Arc<Entry>>,
    found: Vec<Vec<Arc<Entry>>>,
    ranked: Vec<(usize, Vec<Arc<Entry>>)>,
    children: Vec<Arc<str>>,
    rendered: Vec<String>,
    words: Vec<Ranked>,
    from_image: bool,
}

fn answers(path: &Path) -> Answers {
    let store = Store::open(path, DEFAULT_BUSY_TIMEOUT).unwrap();
    let from_image = store.read(|m| m.image_base().is_some()).unwrap();
    if from_image {
        let sections = store.read(|m| SearchIndex::from_image(&m.image_base().unwrap()).is_some());
        assert!(sections.unwrap(), "the search index comes from the image");
    }
    let queries = ["alpha", "épée", "KEY:0001", "round 1", "ti", "absent", "e"];
    let found = queries
        .iter()
        .map(|q| store.read(|m| search(m, q)).unwrap())
        .collect();
    let ranked = queries
        .iter()
        .map(|q| store.read(|m| search_ranked(m, q, 7)).unwrap())
        .collect();
    // The ranked search first: on an image with a recall section, the
    // render index (and its recall index) come from the image.
    let words = ["gamma delta", "épée timeout", "round", "key"]
        .iter()
        .map(|q| store.read(|m| ranked_search(m, q, Some(6))).unwrap())
        .collect();
    let rendered = ["alpha beta", "timeout", ""]
        .iter()
        .map(|focus| store.read(|m| render(m, focus, 400, 0)).unwrap())
        .collect();
    let answers = Answers {
        rendered,
        words,
        entries: store.entries().unwrap(),
        found,
        ranked,
        children: store.children("key:00010").unwrap(),
        from_image,
    };
    store.close();
    answers
}

fn assert_same(a: &Answers, b: &Answers) {
    assert_eq!(a.entries, b.entries);
    assert_eq!(a.found, b.found);
    assert_eq!(a.ranked, b.ranked);
    assert_eq!(a.children, b.children);
    assert_eq!(a.rendered, b.rendered);
    assert_eq!(a.words, b.words);
}

#[test]
fn a_lease_that_ends_writes_an_image_that_a_new_process_uses() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_store(dir.path());
    assert!(image::path_for(&path).exists());
    let with = tempfile::tempdir().unwrap();
    let without = tempfile::tempdir().unwrap();
    let used = answers(&copy(&path, with.path(), true));
    let loaded = answers(&copy(&path, without.path(), false));
    assert!(used.from_image);
    assert!(!loaded.from_image);
    assert_eq!(used.entries.len(), COUNT);
    assert_same(&used, &loaded);
}

#[test]
fn changes_since_the_image_are_applied_on_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_store(dir.path());
    let stamp = image::read_stamp(&image::path_for(&path)).unwrap();
    // A few changes: not enough to write a new image.
    let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
    store
        .put_exact((0..40).map(|i| entry(i * 3, 1)).collect())
        .unwrap();
    store.delete("key:00004").unwrap();
    store.delete("key:00010").unwrap();
    store.put_exact(vec![entry(COUNT + 1, 1)]).unwrap();
    store.close();
    release_all_leases();
    assert_eq!(
        image::read_stamp(&image::path_for(&path)).unwrap(),
        stamp,
        "a few changes leave the image as it was"
    );
    let with = tempfile::tempdir().unwrap();
    let without = tempfile::tempdir().unwrap();
    let used = answers(&copy(&path, with.path(), true));
    let loaded = answers(&copy(&path, without.path(), false));
    assert!(used.from_image);
    assert_same(&used, &loaded);
    assert_eq!(used.entries.len(), COUNT - 1);

    // Then writes on the image-loaded mirror: the same as on a full one.
    for (dir, expect_image) in [(with.path(), true), (without.path(), false)] {
        let copy = dir.join("memory.redb");
        let store = Store::open(&copy, DEFAULT_BUSY_TIMEOUT).unwrap();
        assert_eq!(
            store.read(|m| m.image_base().is_some()).unwrap(),
            expect_image
        );
        store.delete("key:00006").unwrap();
        store
            .put_exact(vec![entry(7, 2), entry(COUNT + 2, 2)])
            .unwrap();
        assert!(store.get("key:00006").unwrap().is_none());
        store.close();
    }
    release_all_leases();
    let a = answers(&with.path().join("memory.redb"));
    let b = answers(&without.path().join("memory.redb"));
    assert_same(&a, &b);
}

#[test]
fn an_image_that_fails_a_check_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_store(dir.path());
    let good = std::fs::read(image::path_for(&path)).unwrap();
    let expected = answers(&copy(&path, tempfile::tempdir().unwrap().path(), false));

    // Bits flipped in the header, in the entries, in the views' sections;
    // cut short.
    let len = good.len();
    let damaged: Vec<Vec<u8>> = vec![
        {
            let mut bad = good.clone();
            bad[20] ^= 1;
            bad
        },
        {
            let mut bad = good.clone();
            bad[600] ^= 0x40;
            bad
        },
        {
            let mut bad = good.clone();
            bad[len - 100] ^= 0x02;
            bad
        },
        good[..len / 2].to_vec(),
    ];
    for bad in damaged {
        let target = tempfile::tempdir().unwrap();
        let copy = copy(&path, target.path(), true);
        std::fs::write(image::path_for(&copy), &bad).unwrap();
        let got = answers(&copy);
        assert!(!got.from_image);
        assert_same(&got, &expected);
    }

    // Another store's image, in the place of this one's.
    let other_dir = tempfile::tempdir().unwrap();
    let other = written_store(other_dir.path());
    let target = tempfile::tempdir().unwrap();
    let copy_path = copy(&path, target.path(), false);
    std::fs::copy(image::path_for(&other), image::path_for(&copy_path)).unwrap();
    let got = answers(&copy_path);
    assert!(!got.from_image);
    assert_same(&got, &expected);
}

#[test]
fn an_image_older_than_the_ring_remembers_is_not_used_and_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_store(dir.path());
    let old_image = std::fs::read(image::path_for(&path)).unwrap();
    // Enough changes to overrun the change ring (256 KiB of keys).
    let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
    for round in 1..=8 {
        store
            .put_exact((0..COUNT).map(|i| entry(i, round)).collect())
            .unwrap();
    }
    store.close();
    release_all_leases();
    drop(store);
    // A process rewrites images at most so often (its leases may have ended
    // between the rounds, each time with the image due): the next process
    // whose lease ends writes the current one.
    let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
    assert!(!store.delete("absent").unwrap());
    store.close();
    release_all_leases();
    let new_image = std::fs::read(image::path_for(&path)).unwrap();
    assert_ne!(old_image, new_image, "a new image was written");

    // The old image beside the changed store: stale, so not used.
    let target = tempfile::tempdir().unwrap();
    let copy_path = copy(&path, target.path(), false);
    std::fs::write(image::path_for(&copy_path), &old_image).unwrap();
    let stale = answers(&copy_path);
    assert!(!stale.from_image);
    let fresh = answers(&copy(&path, tempfile::tempdir().unwrap().path(), true));
    assert!(fresh.from_image);
    assert_same(&stale, &fresh);
    assert!(
        fresh.entries.iter().all(|e| e.value.ends_with("round 8")),
        "the newest values"
    );
}

#[test]
fn a_store_too_small_for_an_image_gets_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.redb");
    let store = Store::open(&path, DEFAULT_BUSY_TIMEOUT).unwrap();
    store
        .put_exact((0..10).map(|i| entry(i, 0)).collect())
        .unwrap();
    store.close();
    release_all_leases();
    assert!(!image::path_for(&path).exists());
}
