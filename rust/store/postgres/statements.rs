//! The statements the medium runs, each prepared once per connection (a
//! prepared statement costs one round trip per use, an unprepared one two).
//! Every value is a parameter, and every statement names its project.
//!
//! The two entry queries return the project's row and the entry rows in one
//! answer (one statement, so one snapshot: the project's `seq` and the rows
//! agree). The project's row is the one whose key is NULL (no entry's is);
//! its numbers ride in the entry columns, as the `UNION` needs one shape.

use std::collections::HashMap;

use postgres::{Client, Statement};

/// The project's row in an entry query (each entry query starts with it): `(seq, clock, purged_seq,
/// store_id)` in the `created_at`, `updated_at`, `checksum` and `store_id`
/// columns.
#[cfg(test)]
const PROJECT_ROW: &str = "SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text[], \
     p.seq, p.clock, false, p.purged_seq, p.store_id \
     FROM membolt_projects p WHERE p.id = $1";

/// The rows changed after change `$2` (tombstones included), with the
/// project's row: a refresh.
pub(crate) const CHANGES: &str = "SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text[], \
     p.seq, p.clock, false, p.purged_seq, p.store_id \
     FROM membolt_projects p WHERE p.id = $1 \
     UNION ALL \
     SELECT key, value, type, namespace, refs, created_at, updated_at, deleted, checksum, NULL \
     FROM membolt_entries WHERE project_id = $1 AND seq > $2";

/// Every live entry, with the project's row: a full load. In key order
/// (the primary key's, bytewise as membolt's): the mirror is then built
/// from sorted entries, which is the cheap way.
pub(crate) const EVERYTHING: &str = "SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::text[], \
     p.seq, p.clock, false, p.purged_seq, p.store_id \
     FROM membolt_projects p WHERE p.id = $1 \
     UNION ALL \
     (SELECT key, value, type, namespace, refs, created_at, updated_at, deleted, checksum, NULL \
     FROM membolt_entries WHERE project_id = $1 AND NOT deleted ORDER BY key)";

/// A project's id and store id by name.
pub(crate) const FIND_PROJECT: &str = "SELECT id, store_id FROM membolt_projects WHERE name = $1";

/// A new project (nothing if another client made it first).
pub(crate) const CREATE_PROJECT: &str = "INSERT INTO membolt_projects (name, store_id) VALUES ($1, $2) \
     ON CONFLICT (name) DO NOTHING";

/// Takes the project's write lock (see schema.rs) and returns its row.
pub(crate) const LOCK: &str =
    "SELECT seq, clock, store_id, purged_seq FROM membolt_lock_project($1, $2, $3)";

/// Gives up the lock of a `hold()` block.
pub(crate) const UNLOCK: &str = "SELECT pg_advisory_unlock($1, $2)";

/// One change set: the project's new `seq` and clock, and every changed
/// row (see columns.rs), in one statement.
pub(crate) const WRITE: &str = "WITH project AS ( \
         UPDATE membolt_projects SET seq = $2, clock = GREATEST(clock, $3) \
         WHERE id = $1 RETURNING id \
     ) \
     INSERT INTO membolt_entries (project_id, key, value, type, namespace, refs, \
         created_at, updated_at, seq, deleted, checksum) \
     SELECT project.id, c.key, c.value, c.type, c.namespace, c.refs::text[], \
         c.created_at, c.updated_at, $2, c.deleted, c.checksum \
     FROM project, unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
         $9::int8[], $10::int8[], $11::bool[], $12::int8[]) \
         AS c(key, value, type, namespace, refs, created_at, updated_at, deleted, checksum) \
     ON CONFLICT (project_id, key) DO UPDATE SET \
         value = EXCLUDED.value, type = EXCLUDED.type, namespace = EXCLUDED.namespace, \
         refs = EXCLUDED.refs, created_at = EXCLUDED.created_at, \
         updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq, \
         deleted = EXCLUDED.deleted, checksum = EXCLUDED.checksum";

/// Forgets tombstones of changes up to `$2`: readers that saw less reload.
pub(crate) const PURGE: &str = "WITH gone AS ( \
         DELETE FROM membolt_entries WHERE project_id = $1 AND deleted AND seq <= $2 \
     ) \
     UPDATE membolt_projects SET purged_seq = GREATEST(purged_seq, $2) WHERE id = $1";

/// The statements prepared on one connection.
#[derive(Default)]
pub(crate) struct Prepared(HashMap<&'static str, Statement>);

impl Prepared {
    /// `sql`, prepared on `client` the first time.
    pub(crate) fn get(
        &mut self,
        client: &mut Client,
        sql: &'static str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.0.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql)?;
        self.0.insert(sql, statement.clone());
        Ok(statement)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_queries_share_the_project_row() {
        assert!(CHANGES.starts_with(PROJECT_ROW));
        assert!(EVERYTHING.starts_with(PROJECT_ROW));
    }
}
