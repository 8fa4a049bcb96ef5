//! Writing an image: into `<store>.image.new`, synced, then renamed over
//! `<store>.image`, so that a reader sees the old image or the new one,
//! whole, and a writer killed part way leaves only the `.new` file (which
//! nobody reads and the next writer overwrites). A store file's image is
//! written only by the process holding the store's write lock, so two
//! writers never share the `.new` file; an image that processes write
//! without a lock (a PostgreSQL project's local image) is written under a
//! name of the writing process's own ([`write_image_unlocked`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::Xxh3;

use super::{
    ARENA, BUILD_AT, CRC_AT, ENTRIES, ENTRY_LEN, FORMAT, HEADER_LEN, MAGIC, MAX_SECTIONS,
    MAX_STORE_ID, NAMES, NEW_SUFFIX, REFS, SECTION_ENTRY_LEN, SECTIONS_AT, Stamp, TOKEN_AT,
    build_tag, path_for,
};
use crate::entry::Entry;

/// Writes the image of `entries` (every entry of the state `stamp` names,
/// sorted by key) beside the store file `store`, with `extra` sections
/// (the views').
pub fn write_image(
    store: &Path,
    stamp: &Stamp,
    clock: i64,
    entries: &[&Arc<Entry>],
    extra: Vec<(u32, Vec<u8>)>,
) -> io::Result<()> {
    let mut new_name = store.as_os_str().to_owned();
    new_name.push(NEW_SUFFIX);
    let new_path = std::path::PathBuf::from(new_name);
    let _ = std::fs::remove_file(&new_path);
    write_via(&new_path, store, stamp, clock, entries, extra)
}

/// [`write_image`] for an image that no lock guards: the temporary file's
/// name is the process's own (`<store>.image.new.<pid>.<random>`), so two
/// writers never write one file; the last rename wins, and either image is
/// whole.
pub fn write_image_unlocked(
    store: &Path,
    stamp: &Stamp,
    clock: i64,
    entries: &[&Arc<Entry>],
    extra: Vec<(u32, Vec<u8>)>,
) -> io::Result<()> {
    let mut new_name = store.as_os_str().to_owned();
    new_name.push(format!(
        "{NEW_SUFFIX}.{}.{:016x}",
        std::process::id(),
        crate::random::random_u64()
    ));
    write_via(Path::new(&new_name), store, stamp, clock, entries, extra)
}

fn write_via(
    new_path: &Path,
    store: &Path,
    stamp: &Stamp,
    clock: i64,
    entries: &[&Arc<Entry>],
    extra: Vec<(u32, Vec<u8>)>,
) -> io::Result<()> {
    if stamp.store_id.len() > MAX_STORE_ID || extra.len() + 4 > MAX_SECTIONS {
        return Err(io::Error::other(
            "the image cannot hold this store's identity",
        ));
    }
    let final_path = path_for(store);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(new_path)?;
    let written = write_into(&file, stamp, clock, entries, extra)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(new_path, &final_path));
    if written.is_err() {
        let _ = std::fs::remove_file(new_path);
    }
    written
}

struct Sections<'a> {
    file: &'a File,
    at: u64,
    table: Vec<(u32, u64, u64, u64)>,
}

impl Sections<'_> {
    fn add(&mut self, tag: u32, bytes: &[u8]) -> io::Result<()> {
        let mut hasher = Xxh3::new();
        hasher.update(bytes);
        self.file.write_all_at(bytes, self.at)?;
        self.table
            .push((tag, self.at, bytes.len() as u64, hasher.digest()));
        self.at += (bytes.len() as u64).next_multiple_of(8);
        Ok(())
    }
}

fn write_into(
    file: &File,
    stamp: &Stamp,
    clock: i64,
    entries: &[&Arc<Entry>],
    extra: Vec<(u32, Vec<u8>)>,
) -> io::Result<()> {
    let mut sections = Sections {
        file,
        at: HEADER_LEN as u64,
        table: Vec::new(),
    };
    // The distinct types and namespaces, then the entry table and the
    // arena, built together.
    let mut names: Vec<&str> = Vec::new();
    let mut name_index: FxHashMap<&str, u32> = FxHashMap::default();
    for entry in entries {
        for name in [&*entry.kind, &*entry.namespace] {
            name_index.entry(name).or_insert_with(|| {
                names.push(name);
                (names.len() - 1) as u32
            });
        }
    }
    let mut table = Vec::with_capacity(entries.len() * ENTRY_LEN);
    let text_len: usize = entries.iter().map(|e| e.key.len() + e.value.len()).sum();
    let mut arena: Vec<u8> = Vec::with_capacity(text_len);
    let mut refs: Vec<u8> = Vec::new();
    let mut reference_texts: Vec<&str> = Vec::new();
    for entry in entries {
        let kind = name_index[&*entry.kind];
        let namespace = name_index[&*entry.namespace];
        table.extend_from_slice(&(arena.len() as u64).to_le_bytes());
        table.extend_from_slice(&(entry.key.len() as u32).to_le_bytes());
        table.extend_from_slice(&(entry.value.len() as u32).to_le_bytes());
        table.extend_from_slice(&kind.to_le_bytes());
        table.extend_from_slice(&namespace.to_le_bytes());
        table.extend_from_slice(&(reference_texts.len() as u32).to_le_bytes());
        table.extend_from_slice(&(entry.references.len() as u32).to_le_bytes());
        table.extend_from_slice(&entry.created_at.to_le_bytes());
        table.extend_from_slice(&entry.updated_at.to_le_bytes());
        arena.extend_from_slice(entry.key.as_bytes());
        arena.extend_from_slice(entry.value.as_bytes());
        reference_texts.extend(entry.references.iter().map(|r| &**r));
    }
    for reference in reference_texts {
        refs.extend_from_slice(&(arena.len() as u64).to_le_bytes());
        refs.extend_from_slice(&(reference.len() as u32).to_le_bytes());
        refs.extend_from_slice(&0u32.to_le_bytes());
        arena.extend_from_slice(reference.as_bytes());
    }
    let mut name_bytes = (names.len() as u32).to_le_bytes().to_vec();
    for name in &names {
        name_bytes.extend_from_slice(&(name.len() as u32).to_le_bytes());
        name_bytes.extend_from_slice(name.as_bytes());
    }
    sections.add(ENTRIES, &table)?;
    drop(table);
    sections.add(ARENA, &arena)?;
    drop(arena);
    sections.add(REFS, &refs)?;
    sections.add(NAMES, &name_bytes)?;
    for (tag, bytes) in extra {
        if [ENTRIES, ARENA, REFS, NAMES].contains(&tag) {
            return Err(io::Error::other(
                "a view's section reuses a tag of the store",
            ));
        }
        sections.add(tag, &bytes)?;
    }
    let length = sections.at;
    file.set_len(length)?;
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&FORMAT.to_le_bytes());
    header[12..16].copy_from_slice(&(sections.table.len() as u32).to_le_bytes());
    header[16..24].copy_from_slice(&stamp.sequence.to_le_bytes());
    header[24..32].copy_from_slice(&stamp.count.to_le_bytes());
    header[32..40].copy_from_slice(&clock.to_le_bytes());
    let [id, seq, head] = stamp.position.unwrap_or_default();
    header[40..48].copy_from_slice(&id.to_le_bytes());
    header[48..56].copy_from_slice(&seq.to_le_bytes());
    header[56..64].copy_from_slice(&head.to_le_bytes());
    header[64..72].copy_from_slice(&length.to_le_bytes());
    header[72] = stamp.store_id.len() as u8;
    header[73..73 + stamp.store_id.len()].copy_from_slice(&stamp.store_id);
    for (i, (tag, offset, len, hash)) in sections.table.iter().enumerate() {
        let at = SECTIONS_AT + i * SECTION_ENTRY_LEN;
        header[at..at + 4].copy_from_slice(&tag.to_le_bytes());
        header[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
        header[at + 16..at + 24].copy_from_slice(&len.to_le_bytes());
        header[at + 24..at + 32].copy_from_slice(&hash.to_le_bytes());
    }
    header[TOKEN_AT..TOKEN_AT + 8].copy_from_slice(&stamp.token.to_le_bytes());
    header[BUILD_AT..BUILD_AT + 4].copy_from_slice(&build_tag().to_le_bytes());
    let crc = crc32fast::hash(&header[..CRC_AT]);
    header[CRC_AT..].copy_from_slice(&crc.to_le_bytes());
    file.write_all_at(&header, 0)?;
    Ok(())
}
