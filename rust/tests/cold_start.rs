//! Where the cold start of a real store goes, phase by phase.
//!
//! ```text
//! MEMBOLT_TIMING_STORE=/tmp/membolt-bench-cache/workload-100000.redb \
//!     cargo test --release --test cold_start -- --ignored --nocapture
//! ```
//!
//! A timing report, not a test: it is ignored unless asked for, and asserts
//! nothing about times. Every phase runs in this one process, so later phases
//! find a warm allocator; `benches/bench_cold_start.py` measures what a fresh
//! process pays end to end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use membolt::entry::{Entry, Interner};
use membolt::mirror::Mirror;
use membolt::render_index::RenderIndex;
use membolt::search::SearchIndex;
use membolt::store::Store;
use redb::{ReadOnlyDatabase, ReadableDatabase, ReadableTable, TableDefinition};

const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");

fn timed<T>(label: &str, run: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = run();
    println!("{label:<40} {:>9.1} ms", ms(started.elapsed()));
    value
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
#[ignore = "timing report, not a test"]
fn cold_start_phases() {
    let Some(path) = std::env::var_os("MEMBOLT_TIMING_STORE").map(PathBuf::from) else {
        println!("set MEMBOLT_TIMING_STORE to a store file");
        return;
    };
    let focus = std::env::var("MEMBOLT_TIMING_FOCUS").unwrap_or_else(|_| "timeout".into());
    // End to end first, in a process that has done nothing yet.
    let store = Store::open(&path, Duration::from_secs(5)).unwrap();
    let hits = timed("Store: open + first search", || {
        store.search("zzqqxx").unwrap().len()
    });
    let block = timed("Store: first render (focused)", || {
        store.render(&focus, 500, Some(0)).unwrap().len()
    });
    timed("Store: second render", || {
        store.render(&focus, 500, Some(0)).unwrap().len()
    });
    println!("  ({hits} hits, {block} bytes)");
    store.close();
    drop(store);
    if std::env::var_os("MEMBOLT_TIMING_STORE_ONLY").is_some() {
        return;
    }

    let db = ReadOnlyDatabase::open(&path).unwrap();
    let count = timed("redb: iterate only", || {
        let rtx = db.begin_read().unwrap();
        let table = rtx.open_table(ENTRIES).unwrap();
        let mut n = 0usize;
        for item in table.iter().unwrap() {
            let (key, value) = item.unwrap();
            n += key.value().len() + value.value().len();
        }
        n
    });
    let entries: Vec<Arc<Entry>> = timed("redb: iterate + decode", || {
        let rtx = db.begin_read().unwrap();
        let table = rtx.open_table(ENTRIES).unwrap();
        let mut interner = Interner::default();
        table
            .iter()
            .unwrap()
            .map(|item| {
                let (key, value) = item.unwrap();
                Arc::new(Entry::decode_with(key.value(), value.value(), &mut interner).unwrap())
            })
            .collect()
    });
    println!("  {} entries, {count} bytes", entries.len());
    timed("SearchIndex::build", || SearchIndex::build(&entries));
    let render = timed("RenderIndex::from_entries", || {
        RenderIndex::from_entries(&entries)
    });
    timed("  fill tree", || render.fill().slot_count());
    timed("  token index", || {
        let _ = render.tokens();
    });
    drop(render);
    let mirror = timed("Mirror::from_entries (all)", || {
        Mirror::from_entries(entries.clone(), vec![1], 0)
    });
    timed("  render index (if lazy)", || {
        let _ = mirror.render_index();
    });
}
