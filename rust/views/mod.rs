//! What the store's entries look like to their readers: substring search
//! (§4), the ranked word search (§15), the `<memory>` block (§5), the
//! causal graph, the parts of the system-prompt section (§5.9) and queries
//! (§9).
//!
//! A view reads the mirror (through `Store::read`) and never writes. The
//! indexes views derive from the entries (the search index, the render
//! index with its token index and fill tree) live in the mirror's derived
//! slot as one [`Views`] value: the mirror tells it about every change
//! through the store's `Derived` hook, so each index is built once, on the
//! first call that needs it, and then only updated.
//!
//! The search index, the render index and its recall index are three
//! indexes with three jobs: substrings, the block's selection, and terms.

pub mod fill_tree;
pub mod graph;
pub mod ids;
mod lowered_text;
pub mod prompt;
pub mod query;
pub mod ranked_search;
pub mod recall;
pub mod render;
pub mod render_index;
pub mod search;
pub mod selection;
pub mod semantic;

use std::any::Any;
use std::sync::{Arc, OnceLock};

use crate::entry::Entry;
use crate::parallel::PARALLEL_MIN_ENTRIES;
use crate::query::Value;
use crate::store::core_indexes::CoreIndexes;
use crate::store::mirror::{Derived, Mirror};

use recall::RecallIndex;
use render_index::RenderIndex;
use search::SearchIndex;
use semantic::TextHashes;

/// The indexes the views derive from a mirror, each built on first use.
///
/// Invariant: the render index is built only once the mirror's core indexes
/// are (it keeps parent links up to date from their children lists), so
/// the mirror always hands them to [`Derived::upsert`] when it is built.
#[derive(Default)]
pub struct Views {
    search: OnceLock<SearchIndex>,
    render: OnceLock<RenderIndex>,
    /// The `memory` relation's rows, kept until the next change.
    memory_rows: OnceLock<Arc<Vec<Value>>>,
    /// §15.4: the hash of each entry's text by render id, built (after the
    /// render index) by the first search with a vector.
    text_hashes: OnceLock<TextHashes>,
}

impl Derived for Views {
    fn upsert(
        &mut self,
        entry: &Arc<Entry>,
        previous: Option<&Arc<Entry>>,
        core: Option<&CoreIndexes>,
    ) {
        if let Some(search) = self.search.get_mut() {
            search.upsert(entry);
        }
        if let Some(render) = self.render.get_mut() {
            let core = core.expect("a built render index comes with the core indexes");
            render.upsert(entry, previous, core.children_of(&entry.key));
            if let (Some(hashes), Some(id)) = (self.text_hashes.get_mut(), render.id(&entry.key)) {
                hashes.set(id, entry);
            }
        }
    }

    fn remove(&mut self, entry: &Arc<Entry>, core: Option<&CoreIndexes>) {
        self.memory_rows = OnceLock::new();
        if let Some(search) = self.search.get_mut() {
            search.remove(&entry.key);
        }
        if let Some(render) = self.render.get_mut() {
            let core = core.expect("a built render index comes with the core indexes");
            let id = render.id(&entry.key);
            render.remove(entry, core.children_of(&entry.key));
            if let (Some(hashes), Some(id)) = (self.text_hashes.get_mut(), id) {
                hashes.clear(id);
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The render index of a mirror loaded from an image, with the image's
/// recall index (the costly part, whose build stems every word of the
/// store): built over the image's entries, so that its ids are the ones the
/// recall section was written under, then brought up to date with the
/// changes since the image as any write would. `None` when the image has no
/// usable recall section.
fn render_index_from_image(mirror: &Mirror) -> Option<RenderIndex> {
    let image = mirror.image_base()?;
    let base = image.base;
    let recall = RecallIndex::from_image_bytes(base.image().section(RECALL_SECTION)?)?;
    if recall.document_count() as usize != base.len() {
        return None;
    }
    let entries: Vec<&Arc<Entry>> = (0..base.len()).map(|i| base.entry(i)).collect();
    let mut index = std::thread::scope(|scope| {
        let core = (mirror.built_core_indexes().is_none() && entries.len() >= PARALLEL_MIN_ENTRIES)
            .then(|| scope.spawn(|| mirror.core_indexes()));
        let index = RenderIndex::from_entries(&entries);
        if let Some(core) = core {
            core.join().expect("core index thread");
        }
        index
    });
    if !index.set_recall(recall) {
        return None;
    }
    let core = mirror.core_indexes();
    for position in image.shadowed() {
        let entry = base.entry(position);
        index.remove(entry, core.children_of(&entry.key));
    }
    for entry in image.changed() {
        index.upsert(entry, None, core.children_of(&entry.key));
    }
    Some(index)
}

/// The views' indexes of `mirror`.
fn views(mirror: &Mirror) -> &Views {
    register_image_sections();
    mirror
        .derived(|| Box::new(Views::default()))
        .as_any()
        .downcast_ref()
        .expect("the views own the mirror's derived slot")
}

/// The `memory` relation of queries (§9.2): every entry as a row, sorted by
/// key; built on first use and kept until the next change.
pub fn memory_rows(mirror: &Mirror) -> Arc<Vec<Value>> {
    views(mirror)
        .memory_rows
        .get_or_init(|| crate::query::memory_rows(mirror.iter().cloned().collect()))
        .clone()
}

/// The substring-search index, built on first use.
pub fn search_index(mirror: &Mirror) -> &SearchIndex {
    views(mirror).search.get_or_init(|| {
        if let Some(index) = mirror
            .image_base()
            .as_ref()
            .and_then(SearchIndex::from_image)
        {
            return index;
        }
        let entries: Vec<&Arc<Entry>> = mirror.iter().collect();
        SearchIndex::build(&entries)
    })
}

/// The image section of the recall index (see [`render_index_from_image`]).
const RECALL_SECTION: u32 = crate::store::image::tag(b"RCLL");

/// The views' sections of an image of `entries` (sorted by key), which a
/// new process's views take instead of building their indexes
/// (`store/image/`): the search index, and the recall index under the ids
/// a render index of the same entries gives them.
pub fn image_sections(entries: &[&Arc<Entry>]) -> Vec<(u32, Vec<u8>)> {
    let mut sections = SearchIndex::image_sections(entries);
    if let Some(recall) = RenderIndex::from_entries(entries).recall().to_image_bytes() {
        sections.push((RECALL_SECTION, recall));
    }
    sections
}

/// Has the images this process writes carry the views' sections.
pub fn register_image_sections() {
    crate::store::image::set_view_sections(image_sections);
}

/// §15.4: the hashes of the entries' texts by render id, built on first
/// use (with the render index and its recall index).
pub(crate) fn text_hashes(mirror: &Mirror) -> &TextHashes {
    views(mirror)
        .text_hashes
        .get_or_init(|| TextHashes::build(render_index_with_recall(mirror)))
}

/// The indexes of the `<memory>` block, built on first use (with the
/// mirror's core indexes, on another thread, if those are not built yet).
/// Its recall index, the largest part, is left to the first call that
/// needs it: a render without a focus (a session's first prompt) does not.
pub fn render_index(mirror: &Mirror) -> &RenderIndex {
    build_render_index(mirror, false)
}

/// [`render_index`] with its recall index, for a focused render or a
/// ranked search: when the whole index is still to be built, the recall
/// index is built beside the rest, on its own thread.
pub fn render_index_with_recall(mirror: &Mirror) -> &RenderIndex {
    let index = build_render_index(mirror, true);
    index.recall();
    index
}

fn build_render_index(mirror: &Mirror, with_recall: bool) -> &RenderIndex {
    views(mirror).render.get_or_init(|| {
        if with_recall && let Some(index) = render_index_from_image(mirror) {
            return index;
        }
        let entries: Vec<&Arc<Entry>> = mirror.iter().collect();
        std::thread::scope(|scope| {
            let core = (mirror.built_core_indexes().is_none()
                && entries.len() >= PARALLEL_MIN_ENTRIES)
                .then(|| scope.spawn(|| mirror.core_indexes()));
            let render = if with_recall {
                RenderIndex::for_render(&entries)
            } else {
                RenderIndex::from_entries(&entries)
            };
            if let Some(core) = core {
                core.join().expect("core index thread");
            }
            mirror.core_indexes();
            render
        })
    })
}
