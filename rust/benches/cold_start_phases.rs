//! Where the cold start of a real store goes, phase by phase.
//!
//! ```text
//! MEMBOLT_TIMING_STORE=/tmp/membolt-bench-cache/workload-100000.redb \
//!     cargo bench --bench cold_start_phases
//! ```
//!
//! A timing report: it prints and asserts nothing (`benches/bench_cold_start.py`
//! builds the store it reads). The first phases (the `Store` API end to end) run in
//! a process that has done nothing yet; later phases find a warm allocator.
//! `benches/bench_cold_start.py` measures what a fresh Python process pays.
//!
//! Knobs (environment):
//! * `MEMBOLT_TIMING_FOCUS`: the focus of the first render;
//! * `MEMBOLT_TIMING_STORE_ONLY=1`: only the `Store` phases;
//! * `MEMBOLT_TIMING_RENDER_FIRST=1`: the first `Store` call renders;
//! * `MEMBOLT_TIMING_SAVE_FIRST=1`: the first `Store` call saves (a new key;
//!   run it on a copy of the store);
//! * `MEMBOLT_TIMING_PHASE=memory|iterate|decode|search|find|render|graph|tokens`: only that
//!   phase (`iterate` and `decode` in a fresh process), e.g. under `perf`;
//! * `MEMBOLT_TIMING_QUERIES=a,b`: the queries of the `find` phase;
//! * `MEMBOLT_TIMING_REPEAT=n`: best and median of n runs of a build phase;
//! * `MEMBOLT_TIMING_CACHE=bytes`: redb's cache for the phases run here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use membolt::entry::{Entry, Interner};
use membolt::store::Store;
use membolt::store::mirror::Mirror;
use membolt::views::recall::RecallIndex;
use membolt::views::render_index::RenderIndex;
use membolt::views::search::SearchIndex;
use redb::{ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition};

const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn timed<T>(label: &str, run: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = run();
    println!("{label:<40} {:>9.1} ms", ms(started.elapsed()));
    value
}

/// The best and median of `MEMBOLT_TIMING_REPEAT` runs (default 1) of a
/// phase, each result dropped before the next run.
fn best<T>(label: &str, mut run: impl FnMut() -> T) {
    let repeat: usize = env("MEMBOLT_TIMING_REPEAT")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut times = Vec::new();
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let value = run();
        times.push(started.elapsed());
        drop(value);
    }
    times.sort();
    println!(
        "{label:<40} {:>9.1} ms (best of {}, median {:.1})",
        ms(times[0]),
        times.len(),
        ms(times[times.len() / 2])
    );
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn main() {
    let Some(path) = env("MEMBOLT_TIMING_STORE").map(PathBuf::from) else {
        println!("set MEMBOLT_TIMING_STORE to a store file");
        return;
    };
    let focus = env("MEMBOLT_TIMING_FOCUS").unwrap_or_else(|| "timeout".into());
    let phase = env("MEMBOLT_TIMING_PHASE");
    if phase.is_none() {
        store_phases(&path, &focus);
        if env("MEMBOLT_TIMING_STORE_ONLY").is_some() {
            return;
        }
    }
    let cache: usize = env("MEMBOLT_TIMING_CACHE")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1 << 30);
    let db = redb::Builder::new()
        .set_cache_size(cache)
        .open_read_only(&path)
        .unwrap();
    match phase.as_deref() {
        Some("memory") => {
            memory_phases(decode(&db));
            return;
        }
        Some("iterate") => {
            timed("fresh: redb iterate only", || iterate(&db));
            return;
        }
        Some("decode") => {
            drop(timed("fresh: redb iterate + decode", || decode(&db)));
            timed("again: redb iterate only", || iterate(&db));
            return;
        }
        _ => {}
    }
    let count = timed("redb: iterate only", || iterate(&db));
    let entries = timed("redb: iterate + decode", || decode(&db));
    println!("  {} entries, {count} bytes", entries.len());
    let refs: Vec<&Arc<Entry>> = entries.iter().collect();
    build_phases(&refs, phase.as_deref());
    if phase.is_none() {
        mirror_phases(entries);
    }
}

fn render(store: &Store, focus: &str) -> usize {
    store
        .read(|m| membolt::views::render::render(m, focus, 500, 0).len())
        .unwrap()
}

/// Saves a new note under `key`.
fn save_new(store: &Store, key: &str) -> Arc<Entry> {
    store
        .save(membolt::store::SaveRequest {
            key: key.into(),
            value: format!("a value of {key}"),
            kind: None,
            inferred_kind: "note".into(),
            namespace: None,
            references: None,
            parent_kind: None,
        })
        .unwrap()
}

/// The `Store` API end to end, in a process that has done nothing yet.
fn store_phases(path: &Path, focus: &str) {
    let store = Store::open(path, Duration::from_secs(5)).unwrap();
    if env("MEMBOLT_TIMING_SAVE_FIRST").is_some() {
        timed("Store: open + first save", || {
            save_new(&store, "bench:first-save")
        });
        timed("Store: second save", || {
            save_new(&store, "bench:second-save")
        });
    }
    let render_first = env("MEMBOLT_TIMING_RENDER_FIRST").is_some();
    let mut block = 0;
    if render_first {
        block = timed("Store: open + first render (focused)", || {
            render(&store, focus)
        });
    }
    let hits = timed("Store: first search", || {
        store
            .read(|m| membolt::views::search::search(m, "zzqqxx").len())
            .unwrap()
    });
    if !render_first {
        block = timed("Store: first render (focused)", || render(&store, focus));
    }
    timed("Store: second render", || render(&store, focus));
    println!("  ({hits} hits, {block} bytes)");
    store.close();
}

fn iterate(db: &ReadOnlyDatabase) -> usize {
    let rtx = db.begin_read().unwrap();
    let table = rtx.open_table(ENTRIES).unwrap();
    table
        .iter()
        .unwrap()
        .map(|item| {
            let (key, value) = item.unwrap();
            key.value().len() + value.value().len()
        })
        .sum()
}

fn decode(db: &ReadOnlyDatabase) -> Vec<Arc<Entry>> {
    let rtx = db.begin_read().unwrap();
    let table = rtx.open_table(ENTRIES).unwrap();
    let mut interner = Interner::default();
    table
        .iter()
        .unwrap()
        .map(|item| {
            let (key, value) = item.unwrap();
            Arc::new(
                Entry::decode_with(
                    key.value(),
                    value.value(),
                    &mut interner,
                    membolt::entry::Accept::Legacy,
                )
                .unwrap(),
            )
        })
        .collect()
}

/// The bulk builds, each on its own (all, or only `phase`).
fn build_phases(refs: &[&Arc<Entry>], phase: Option<&str>) {
    let wanted = |name: &str| phase.is_none_or(|p| p == name);
    if wanted("search") {
        best("SearchIndex::build", || SearchIndex::build(refs));
    }
    if wanted("find") {
        let index = SearchIndex::build(refs);
        let queries = env("MEMBOLT_TIMING_QUERIES").unwrap_or_else(|| "timeout,zzqqxx".into());
        for query in queries.split(',') {
            let hits = index.find(query).len();
            best(&format!("find {query:?} ({hits} hits) x100"), || {
                (0..100).map(|_| index.find(query).len()).sum::<usize>()
            });
        }
    }
    if wanted("render") {
        best("RenderIndex::from_entries", || {
            RenderIndex::from_entries(refs)
        });
    }
    if wanted("graph") {
        let entries: Vec<Arc<Entry>> = refs.iter().map(|e| (*e).clone()).collect();
        best("Mirror::from_entries + graph", || {
            let mirror = Mirror::from_entries(entries.clone(), vec![1], 0);
            let _ = mirror.newest();
            mirror
        });
    }
    if wanted("tokens") {
        best("RecallIndex::build", || {
            RecallIndex::build(refs.iter().enumerate().map(|(id, e)| (id as u32, &***e)))
        });
    }
    if phase.is_none() {
        let render = RenderIndex::from_entries(refs);
        best("fill tree", || {
            membolt::views::fill_tree::FillTree::from_sorted(
                (0..refs.len() as u32).map(|id| (id, render.cost(id))),
            )
        });
    }
}

/// The mirror as a load builds it, then its lazily built indexes.
fn mirror_phases(entries: Vec<Arc<Entry>>) {
    let mirror = timed("Mirror::from_entries", || {
        Mirror::from_entries(entries, vec![1], 0)
    });
    timed("  search index", || {
        let _ = membolt::views::search_index(&mirror);
    });
    timed("  render index (graph first)", || {
        let _ = membolt::views::render_index(&mirror);
    });
    timed("  fill tree", || {
        membolt::views::render_index(&mirror).fill().slot_count()
    });
    timed("  token index", || {
        let _ = membolt::views::render_index(&mirror).recall();
    });
}

/// Resident memory now, in MiB.
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / f64::from(1 << 20)
}

/// What each part of the mirror adds to the resident memory, in the order a
/// process builds them.
fn memory_phases(entries: Vec<Arc<Entry>>) {
    let count = entries.len() as f64;
    let mut last = rss_mib();
    let mut step = |label: &str| {
        let now = rss_mib();
        println!(
            "{label:<32} {:>8.1} MiB ({:>6.0} bytes/entry), resident {now:.1} MiB",
            now - last,
            (now - last) * f64::from(1 << 20) / count
        );
        last = now;
    };
    step("entries (decoded)");
    let mirror = Mirror::from_entries(entries, vec![1], 0);
    step("key map");
    let _ = mirror.newest();
    step("graph");
    let _ = membolt::views::search_index(&mirror);
    step("search index");
    let _ = membolt::views::render_index(&mirror);
    step("render index + fill + tokens");
}
