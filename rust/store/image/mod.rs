//! The image: a file beside a store (`<store>.image`) holding the mirror's
//! entries, and the views' indexes of them, laid out to be used where they
//! lie, so that a new process maps it and checks it instead of decoding
//! every record and rebuilding every index.
//!
//! It is a cache, never the source of truth. It names the state it
//! describes (the [`Stamp`]: the store's identity, the medium's change
//! number, the entry count, the medium's change-log position); the medium
//! compares that with the store in O(1) at open and uses the image only when
//! it describes a state the medium can catch up from, applying the changes
//! since on top as any catch-up does. An image that fails a check (another
//! store, an older sequence the log no longer covers, a bad checksum, a
//! short file) is ignored, never served.
//!
//! ```text
//! header (512 bytes, little-endian)
//!     0   8  magic "mbimage\0"
//!     8   4  format (2)
//!    12   4  number of sections (at most 12)
//!    16   8  sequence: the medium's change number (redb: journal_seq)
//!    24   8  entry count
//!    32   8  clock (the mirror's, i64)
//!    40   8  log position: id (0: none), then seq and head (redb: the
//!    48   8  change ring's `Position`)
//!    56   8
//!    64   8  file length
//!    72   1  length of the store id (at most 32), then its bytes
//!   112 384  sections: tag (u32), 0 (u32), offset, length, XXH3 of the bytes
//!   496   8  token: the random number the medium recorded beside the state
//!              when this image was written (0: none; see [`Stamp::token`])
//!   504   4  build: the low half of the XXH3 of the crate's version (an
//!              image of another version's views is never read)
//!   508   4  CRC-32 of bytes 0..508
//! sections (each at an offset that is a multiple of 8)
//!   ENTR  per entry, sorted by key, 48 bytes: key offset (u64, in ARNA),
//!         key length, value length (u32 each; the value follows the key),
//!         type and namespace (u32 indexes into NAME), first reference
//!         (u32 index into REFS), reference count (u32), created_at,
//!         updated_at (i64)
//!   ARNA  the texts: each entry's key then value, then the references
//!   REFS  per reference, 16 bytes: offset (u64, in ARNA), length (u32), 0
//!   NAME  the distinct types and namespaces: count (u32), then each as
//!         length (u32) and bytes
//!   other tags: sections of the views (see `set_view_sections`), which
//!         this module stores and checks without knowing what they are
//! ```
//!
//! Every section's checksum is verified when the image is opened (one pass
//! at memory speed); after that nothing is decoded until it is asked for:
//! an entry becomes an [`Entry`] the first time a call reads it
//! ([`Base::entry`]).

mod mapping;
pub(crate) mod write;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use xxhash_rust::xxh3::xxh3_64;

use crate::entry::Entry;
use mapping::Mapped;

/// The image's name: the store file's with this appended.
pub const SUFFIX: &str = ".image";
/// Where a writer builds the next image before renaming it into place.
pub(crate) const NEW_SUFFIX: &str = ".image.new";

const MAGIC: &[u8; 8] = b"mbimage\0";
const FORMAT: u32 = 2;
pub(crate) const HEADER_LEN: usize = 512;
const MAX_SECTIONS: usize = 12;
const SECTIONS_AT: usize = 112;
const SECTION_ENTRY_LEN: usize = 32;
const TOKEN_AT: usize = 496;
const BUILD_AT: usize = 504;
const CRC_AT: usize = 508;

/// What an image's `build` field must hold: the views' sections (trigram
/// signatures, lowered texts, stems, render ids) are laid out by this
/// version's code, so an image of any other version is not read, however
/// well it passes its checksums.
fn build_tag() -> u32 {
    xxh3_64(env!("CARGO_PKG_VERSION").as_bytes()) as u32
}
const MAX_STORE_ID: usize = 32;
const ENTRY_LEN: usize = 48;
const REF_LEN: usize = 16;

/// A section's tag: four ASCII bytes read as a little-endian `u32`.
pub const fn tag(name: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*name)
}

const ENTRIES: u32 = tag(b"ENTR");
const ARENA: u32 = tag(b"ARNA");
const REFS: u32 = tag(b"REFS");
const NAMES: u32 = tag(b"NAME");

/// The state an image describes, compared with the store's at open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub store_id: Vec<u8>,
    /// The medium's number of the newest change the image holds.
    pub sequence: u64,
    pub count: u64,
    /// Where the medium's change log stood (id, seq, head), when it has
    /// one: the changes since are listed from there.
    pub position: Option<[u64; 3]>,
    /// A random number the medium recorded with its state when it wrote
    /// the image (0: none). The change number and count alone cannot tell
    /// the state the image was taken of from another one with the same
    /// numbers (a copy of the store that went its own way, a backup put
    /// back): the medium uses the image only when the store still names
    /// this token.
    pub token: u64,
}

/// The views' sections of an image of `entries` (sorted by key), as
/// `(tag, bytes)`: a layer above the store registers the function (the
/// store knows no view), and a process that never registered one writes
/// images without them.
pub type ViewSections = fn(&[&Arc<Entry>]) -> Vec<(u32, Vec<u8>)>;

static VIEW_SECTIONS: OnceLock<ViewSections> = OnceLock::new();

/// Registers the views' sections (the first registration wins).
pub fn set_view_sections(sections: ViewSections) {
    let _ = VIEW_SECTIONS.set(sections);
}

pub(crate) fn view_sections() -> Option<ViewSections> {
    VIEW_SECTIONS.get().copied()
}

/// Whether images are read and written: `MEMBOLT_IMAGE=off` turns them
/// off (the behaviour suite runs both ways), `always` writes one for a
/// store of any size (tests), anything else leaves them on for stores of
/// at least [`MIN_ENTRIES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    Off,
    On,
    Always,
}

/// Below this many entries a full load costs less than a millisecond or
/// two, and no image is written.
pub const MIN_ENTRIES: usize = 2_000;

pub fn setting() -> Setting {
    let value = std::env::var("MEMBOLT_IMAGE").unwrap_or_default();
    match value.trim().to_ascii_lowercase().as_str() {
        "off" | "0" | "false" | "no" => Setting::Off,
        "always" => Setting::Always,
        _ => Setting::On,
    }
}

/// The image beside the store file `store`.
pub fn path_for(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// Why an image is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// There is none (or it cannot be opened: a cache that is not there).
    Missing,
    /// It is there but fails a check: ignored, never served.
    Damaged(String),
}

fn damaged(why: impl Into<String>) -> Problem {
    Problem::Damaged(why.into())
}

#[derive(Clone, Copy, Debug)]
struct Section {
    tag: u32,
    start: usize,
    len: usize,
    hash: u64,
}

/// A checked image, mapped.
pub struct Image {
    map: Mapped,
    stamp: Stamp,
    clock: i64,
    count: usize,
    sections: Vec<Section>,
    /// The types and namespaces, shared by every entry made.
    names: Vec<Arc<str>>,
    entries: std::ops::Range<usize>,
    arena: std::ops::Range<usize>,
    refs: std::ops::Range<usize>,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// The stamp and file length in a header, if the header is whole.
fn parse_header(header: &[u8]) -> Result<(Stamp, i64, u64, Vec<Section>), Problem> {
    if header.len() < HEADER_LEN || &header[..8] != MAGIC {
        return Err(damaged("it is not an image (no magic bytes)"));
    }
    if crc32fast::hash(&header[..CRC_AT]) != u32_at(header, CRC_AT) {
        return Err(damaged("its header fails its checksum"));
    }
    if u32_at(header, 8) != FORMAT {
        return Err(damaged(format!(
            "it is of format {}, not {FORMAT}",
            u32_at(header, 8)
        )));
    }
    if u32_at(header, BUILD_AT) != build_tag() {
        return Err(damaged("it was written by another version of membolt"));
    }
    let section_count = u32_at(header, 12) as usize;
    let id_len = header[72] as usize;
    if section_count > MAX_SECTIONS || id_len > MAX_STORE_ID {
        return Err(damaged("its header is out of range"));
    }
    let position = (u64_at(header, 40) != 0)
        .then(|| [u64_at(header, 40), u64_at(header, 48), u64_at(header, 56)]);
    let stamp = Stamp {
        store_id: header[73..73 + id_len].to_vec(),
        sequence: u64_at(header, 16),
        count: u64_at(header, 24),
        position,
        token: u64_at(header, TOKEN_AT),
    };
    let sections = (0..section_count)
        .map(|i| {
            let at = SECTIONS_AT + i * SECTION_ENTRY_LEN;
            Section {
                tag: u32_at(header, at),
                start: u64_at(header, at + 8) as usize,
                len: u64_at(header, at + 16) as usize,
                hash: u64_at(header, at + 24),
            }
        })
        .collect();
    Ok((
        stamp,
        u64_at(header, 32) as i64,
        u64_at(header, 64),
        sections,
    ))
}

/// The first section (in the header's order) whose bytes fail their
/// checksum. Every byte of the image is hashed: on two threads when it is
/// large, the sections shared out by size (the pass touches every page of
/// the file, and its page faults as well as its hashing then proceed side
/// by side).
fn first_failing<'a>(map: &[u8], sections: &'a [Section]) -> Option<&'a Section> {
    let fails = |section: &Section| {
        xxh3_64(&map[section.start..section.start + section.len]) != section.hash
    };
    if map.len() < PARALLEL_CHECK_BYTES {
        return sections.iter().find(|section| fails(section));
    }
    // Largest first, each to the lighter of the two shares.
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_unstable_by_key(|&i| std::cmp::Reverse(sections[i].len));
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let (mut my_bytes, mut their_bytes) = (0, 0);
    for i in order {
        if my_bytes <= their_bytes {
            my_bytes += sections[i].len;
            mine.push(i);
        } else {
            their_bytes += sections[i].len;
            theirs.push(i);
        }
    }
    let check = |share: &[usize]| -> Vec<usize> {
        share
            .iter()
            .copied()
            .filter(|&i| fails(&sections[i]))
            .collect()
    };
    let mut failed = std::thread::scope(|scope| {
        let other = scope.spawn(|| check(&theirs));
        let mut failed = check(&mine);
        // A thread that could not run verified nothing: all of its share
        // counts as failed.
        failed.extend(other.join().unwrap_or_else(|_| theirs.clone()));
        failed
    });
    failed.sort_unstable();
    failed.first().map(|&i| &sections[i])
}

/// From this size on, an image's checksums are verified on two threads (in
/// the unit tests from a few KiB, so that their damaged images go both
/// ways).
const PARALLEL_CHECK_BYTES: usize = if cfg!(test) { 4 << 10 } else { 8 << 20 };

fn open_file(path: &Path) -> Result<File, Problem> {
    // Never through a symbolic link (§14.2), and only a regular file.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|_| Problem::Missing)?;
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(file),
        _ => Err(Problem::Missing),
    }
}

/// The stamp of the image at `path`, reading its header only (a writer
/// deciding whether to write a new one).
pub fn read_stamp(path: &Path) -> Result<Stamp, Problem> {
    let mut file = open_file(path)?;
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|_| damaged("it is shorter than its header"))?;
    let (stamp, _, length, _) = parse_header(&header)?;
    let actual = file.metadata().map_err(|_| Problem::Missing)?.len();
    if actual != length {
        return Err(damaged(format!(
            "it holds {actual} bytes of the {length} it was written with"
        )));
    }
    Ok(stamp)
}

impl Image {
    /// Maps and checks the image at `path`: header, length, and every
    /// section's checksum.
    pub fn open(path: &Path) -> Result<Image, Problem> {
        let file = open_file(path)?;
        let map = Mapped::map(&file).map_err(|_| Problem::Missing)?;
        Image::check(map)
    }

    fn check(map: Mapped) -> Result<Image, Problem> {
        let (stamp, clock, length, sections) = parse_header(&map)?;
        if map.len() as u64 != length {
            return Err(damaged(format!(
                "it holds {} bytes of the {length} it was written with",
                map.len()
            )));
        }
        for section in &sections {
            let end = section.start.checked_add(section.len);
            if section.start < HEADER_LEN
                || !section.start.is_multiple_of(8)
                || end.is_none_or(|end| end > map.len())
            {
                return Err(damaged("a section lies outside the file"));
            }
        }
        if let Some(section) = first_failing(&map, &sections) {
            return Err(damaged(format!(
                "its section {} fails its checksum",
                String::from_utf8_lossy(&section.tag.to_le_bytes())
            )));
        }
        let find = |tag: u32| {
            sections
                .iter()
                .find(|s| s.tag == tag)
                .map(|s| s.start..s.start + s.len)
                .ok_or_else(|| damaged("a section is missing"))
        };
        let (entries, arena, refs, names) =
            (find(ENTRIES)?, find(ARENA)?, find(REFS)?, find(NAMES)?);
        let count = usize::try_from(stamp.count).map_err(|_| damaged("too many entries"))?;
        if entries.len() != count.saturating_mul(ENTRY_LEN) || !refs.len().is_multiple_of(REF_LEN) {
            return Err(damaged("its entry table does not match its count"));
        }
        let names = parse_names(&map[names]).ok_or_else(|| damaged("its names are unreadable"))?;
        let image = Image {
            map,
            stamp,
            clock,
            count,
            sections,
            names,
            entries,
            arena,
            refs,
        };
        image.check_tables()?;
        Ok(image)
    }

    /// Every offset of the entry and reference tables within bounds, so
    /// that reading an entry later cannot fail.
    fn check_tables(&self) -> Result<(), Problem> {
        let arena_len = self.arena.len() as u64;
        let ref_count = (self.refs.len() / REF_LEN) as u64;
        let names = self.names.len() as u32;
        for i in 0..self.count {
            let record = self.record(i);
            let end = u64_at(record, 0)
                .checked_add(u64::from(u32_at(record, 8)) + u64::from(u32_at(record, 12)));
            let refs_end = u64::from(u32_at(record, 24)) + u64::from(u32_at(record, 28));
            if end.is_none_or(|end| end > arena_len)
                || u32_at(record, 16) >= names
                || u32_at(record, 20) >= names
                || refs_end > ref_count
            {
                return Err(damaged("an entry lies outside the image"));
            }
        }
        let refs = &self.map[self.refs.clone()];
        for record in refs.chunks_exact(REF_LEN) {
            let end = u64_at(record, 0).checked_add(u64::from(u32_at(record, 8)));
            if end.is_none_or(|end| end > arena_len) {
                return Err(damaged("a reference lies outside the image"));
            }
        }
        Ok(())
    }

    pub fn stamp(&self) -> &Stamp {
        &self.stamp
    }

    pub fn clock(&self) -> i64 {
        self.clock
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes of the section `tag`, if the image has one.
    pub fn section(&self, tag: u32) -> Option<&[u8]> {
        self.section_range(tag).map(|range| &self.map[range])
    }

    /// Where the section `tag` is in [`Image::raw`].
    pub fn section_range(&self, tag: u32) -> Option<std::ops::Range<usize>> {
        self.sections
            .iter()
            .find(|s| s.tag == tag)
            .map(|s| s.start..s.start + s.len)
    }

    /// The whole file.
    pub fn raw(&self) -> &[u8] {
        &self.map
    }

    fn record(&self, i: usize) -> &[u8] {
        let at = self.entries.start + i * ENTRY_LEN;
        &self.map[at..at + ENTRY_LEN]
    }

    fn text(&self, offset: u64, len: u32) -> &str {
        let at = self.arena.start + offset as usize;
        std::str::from_utf8(&self.map[at..at + len as usize])
            .expect("an image's texts are UTF-8 (its checksums were verified)")
    }

    /// The key of entry `i` (entries are sorted by key).
    pub fn key(&self, i: usize) -> &str {
        let record = self.record(i);
        self.text(u64_at(record, 0), u32_at(record, 8))
    }

    pub fn updated_at(&self, i: usize) -> i64 {
        u64_at(self.record(i), 40) as i64
    }

    /// The index of entry `i`'s type among the image's names.
    pub fn kind_index(&self, i: usize) -> u32 {
        u32_at(self.record(i), 16)
    }

    /// The index of `name` among the image's names (types and namespaces),
    /// if an entry of the image uses it.
    pub fn name_index(&self, name: &str) -> Option<u32> {
        self.names
            .iter()
            .position(|known| &**known == name)
            .map(|i| i as u32)
    }

    /// The position of `key` among the entries.
    pub fn find(&self, key: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.key(middle).as_bytes().cmp(key.as_bytes()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// The first position whose key is not below `key`.
    pub fn lower_bound(&self, key: &str) -> usize {
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.key(middle).as_bytes() < key.as_bytes() {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// Entry `i`, made from the image's bytes.
    pub fn entry(&self, i: usize) -> Entry {
        let record = self.record(i);
        let key_at = u64_at(record, 0);
        let key_len = u32_at(record, 8);
        let refs_start = u32_at(record, 24) as usize;
        let refs_count = u32_at(record, 28) as usize;
        let refs = &self.map[self.refs.clone()];
        let references = (refs_start..refs_start + refs_count)
            .map(|r| {
                let at = r * REF_LEN;
                Arc::from(self.text(u64_at(refs, at), u32_at(refs, at + 8)))
            })
            .collect();
        Entry {
            key: Arc::from(self.text(key_at, key_len)),
            value: Arc::from(self.text(key_at + u64::from(key_len), u32_at(record, 12))),
            kind: self.names[u32_at(record, 16) as usize].clone(),
            namespace: self.names[u32_at(record, 20) as usize].clone(),
            references,
            created_at: u64_at(record, 32) as i64,
            updated_at: u64_at(record, 40) as i64,
        }
    }
}

fn parse_names(bytes: &[u8]) -> Option<Vec<Arc<str>>> {
    let count = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let mut at = 4;
    let mut names = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let len = u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize;
        let text = std::str::from_utf8(bytes.get(at + 4..at + 4 + len)?).ok()?;
        names.push(Arc::from(text));
        at += 4 + len;
    }
    Some(names)
}

/// The entries of an image, each made on first use and then shared (the
/// mirror and the views hand out the same `Arc`).
pub struct Base {
    image: Image,
    cells: Box<[OnceLock<Arc<Entry>>]>,
}

impl Base {
    pub fn new(image: Image) -> Base {
        let cells = (0..image.len()).map(|_| OnceLock::new()).collect();
        Base { image, cells }
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn entry(&self, i: usize) -> &Arc<Entry> {
        self.cells[i].get_or_init(|| Arc::new(self.image.entry(i)))
    }
}

#[cfg(test)]
mod tests;
