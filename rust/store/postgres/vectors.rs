//! The PostgreSQL medium's vectors (§15.4): the table `membolt_vectors`,
//! one row per project, model and key, created by the first process that
//! stores a vector (so the schema's version, and every server that never
//! sees an embedder, are left alone).
//!
//! ```text
//! membolt_vectors  project_id, key, model (hash of its name), text_hash,
//!                  dims, vector (the text's set of vectors: float32
//!                  little-endian, `dims` each, none to MAX_SET), checksum, seq
//! ```
//! A row is replaced when its key's text is embedded again, so the table
//! holds at most one set per entry and model and needs no compaction. A
//! refresh reads the rows whose `seq` (from a sequence) is above the
//! highest this process has seen. `seq` is not in commit order across
//! processes, so a row committed late under a lower number can be missed
//! by a process that had already seen a higher one: that process then
//! finds the entry without a vector and embeds it again. A cache may miss;
//! it may never serve a wrong vector, and the checksum (CRC-32 of the
//! model, the text hash and the vector) refuses a row changed by hand.

use postgres::types::ToSql;

use super::{Failure, PostgresMedium, schema::LOCK_CLASS};
use crate::error::Result;
use crate::store::medium::Call;
use crate::store::vectors::{MAX_SET, Row, Space, VectorSource};

const CREATE: &str = r#"
CREATE TABLE IF NOT EXISTS membolt_vectors (
    project_id integer NOT NULL REFERENCES membolt_projects (id) ON DELETE CASCADE,
    key text COLLATE "C" NOT NULL,
    model bigint NOT NULL,
    text_hash bigint NOT NULL,
    dims integer NOT NULL,
    vector bytea NOT NULL,
    checksum bigint NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (project_id, model, key)
);
CREATE SEQUENCE IF NOT EXISTS membolt_vectors_seq;
CREATE INDEX IF NOT EXISTS membolt_vectors_changes ON membolt_vectors (project_id, model, seq);
COMMENT ON TABLE membolt_vectors IS
    'membolt: a cache of the entries'' embeddings; deleting rows loses nothing';
"#;

const EXISTS: &str = "SELECT to_regclass('membolt_vectors') IS NOT NULL";

const READ: &str = "SELECT text_hash, dims, vector, checksum, seq FROM membolt_vectors \
     WHERE project_id = $1 AND model = $2 AND seq > $3 ORDER BY seq";

const UPSERT: &str = "INSERT INTO membolt_vectors \
     (project_id, key, model, text_hash, dims, vector, checksum, seq) \
     SELECT $1, k, $2, h, $3, v, c, nextval('membolt_vectors_seq') \
     FROM unnest($4::text[], $5::bigint[], $6::bytea[], $7::bigint[]) AS t (k, h, v, c) \
     ON CONFLICT (project_id, model, key) DO UPDATE SET text_hash = EXCLUDED.text_hash, \
     dims = EXCLUDED.dims, vector = EXCLUDED.vector, checksum = EXCLUDED.checksum, \
     seq = EXCLUDED.seq";

/// The checksum of a row: CRC-32 of the model, the text hash, the dims
/// and the vector's bytes, all little-endian.
fn checksum(model: u64, text_hash: u64, dims: u32, vector: &[u8]) -> i64 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&model.to_le_bytes());
    hasher.update(&text_hash.to_le_bytes());
    hasher.update(&dims.to_le_bytes());
    hasher.update(vector);
    i64::from(hasher.finalize())
}

impl PostgresMedium {
    fn vectors_table_exists(&mut self) -> std::result::Result<bool, Failure> {
        Ok(self
            .query(EXISTS, &[])?
            .first()
            .is_some_and(|row| row.get(0)))
    }

    /// Creates the table (under the schema lock, so two first users do not
    /// both create it).
    fn create_vectors_table(&mut self) -> std::result::Result<(), Failure> {
        self.simple("BEGIN")?;
        self.in_transaction = true;
        self.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_CLASS])?;
        self.simple(CREATE)?;
        self.simple("COMMIT")?;
        self.in_transaction = false;
        Ok(())
    }

    fn read_vectors(&mut self, space: &mut Space) -> std::result::Result<(), Failure> {
        if !space.source_ready {
            if !self.vectors_table_exists()? {
                return Ok(());
            }
            space.source_ready = true;
        }
        let Some(project) = self.find_project()? else {
            return Ok(());
        };
        let model = space.model;
        let rows = self.query(
            READ,
            &[&project, &(model.name_hash as i64), &space.source_seq],
        )?;
        let mut floats = Vec::with_capacity(space.dims());
        for row in rows {
            let text_hash = row.get::<_, i64>(0) as u64;
            let dims = row.get::<_, i32>(1);
            let vector: &[u8] = row.get(2);
            let stored: i64 = row.get(3);
            space.source_seq = space.source_seq.max(row.get(4));
            if dims != model.dims as i32 {
                space.foreign += 1;
                continue;
            }
            let row_bytes = space.dims() * 4;
            if !vector.len().is_multiple_of(row_bytes)
                || vector.len() / row_bytes > MAX_SET as usize
                || checksum(model.name_hash, text_hash, model.dims, vector) != stored
            {
                space.damaged += 1;
                continue;
            }
            floats.clear();
            let (chunks, _) = vector.as_chunks::<4>();
            floats.extend(chunks.iter().map(|c| f32::from_le_bytes(*c)));
            space.push(text_hash, &floats);
        }
        Ok(())
    }

    fn write_vectors(&mut self, space: &Space, rows: &[Row]) -> std::result::Result<(), Failure> {
        if !space.source_ready && !self.vectors_table_exists()? {
            self.create_vectors_table()?;
        }
        let project = self.ensure_project()?;
        let model = space.model;
        // One row per key (the last), as one statement may not update a
        // row twice.
        let mut last: rustc_hash::FxHashMap<&str, &Row> = rustc_hash::FxHashMap::default();
        for row in rows {
            last.insert(&row.key, row);
        }
        let mut keys = Vec::with_capacity(last.len());
        let mut hashes = Vec::with_capacity(last.len());
        let mut vectors = Vec::with_capacity(last.len());
        let mut sums = Vec::with_capacity(last.len());
        for row in last.into_values() {
            let bytes: Vec<u8> = row.vectors.iter().flat_map(|x| x.to_le_bytes()).collect();
            keys.push(super::text::to_column(&row.key).into_owned());
            hashes.push(row.text_hash as i64);
            sums.push(checksum(model.name_hash, row.text_hash, model.dims, &bytes));
            vectors.push(bytes);
        }
        let params: [&(dyn ToSql + Sync); 7] = [
            &project,
            &(model.name_hash as i64),
            &(model.dims as i32),
            &keys,
            &hashes,
            &vectors,
            &sums,
        ];
        self.execute(UPSERT, &params)?;
        Ok(())
    }
}

impl VectorSource for PostgresMedium {
    fn sync(&mut self, space: &mut Space, call: &Call) -> Result<()> {
        self.connected(call, "during a read of vectors", |this| {
            this.read_vectors(space)
        })
    }

    fn append(&mut self, space: &mut Space, rows: &[Row], call: &Call) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        self.connected(call, "while storing vectors", |this| {
            this.write_vectors(space, rows)
        })?;
        self.sync(space, call)
    }
}
