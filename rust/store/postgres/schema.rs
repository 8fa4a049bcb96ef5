//! membolt's tables on a PostgreSQL server, created on first use and
//! versioned in `membolt_schema`; migrations only go forward.
//!
//! ```text
//! membolt_schema    version                      one row: the schema's version
//! membolt_projects  id, name (unique), store_id  one row per project (§12)
//!                   seq                          the number of its newest change
//!                   clock                        §1.3: the largest stamp given out
//!                   purged_seq                   tombstones up to here may be gone
//! membolt_entries   (project_id, key) primary key
//!                   value, type, namespace, refs text[], created_at, updated_at
//!                   seq                          the change that last wrote the row
//!                   deleted                      a tombstone: the key was deleted
//!                   checksum                     §14, see columns.rs
//! membolt_memory    a view: every live entry with its project's name
//! ```
//!
//! Text columns hold the text itself (text.rs: only U+0000 is escaped), so
//! a team can read its memory with plain SQL; keys sort in membolt's order
//! (bytewise, `COLLATE "C"`). Rows must only be written by membolt: a row
//! changed by hand fails its checksum and is reported as damage.
//!
//! The index on `(project_id, seq)` is what makes a refresh cost what
//! changed (the rows with a larger `seq` than the reader saw).

use postgres::Client;

use super::errors::Failure;

/// The schema this version creates and reads; a server holding a newer one
/// is refused (`StoreError::NewerSchema`).
pub const SCHEMA_VERSION: u64 = 1;

/// The advisory-lock class of membolt's locks ("memb"): the first key of
/// `pg_advisory_*lock(int, int)`, the second being a project's id (0: the
/// schema itself).
pub(crate) const LOCK_CLASS: i32 = 0x6d65_6d62;

/// `MIGRATIONS[v - 1]` takes a schema from version `v` to `v + 1`.
const MIGRATIONS: [&str; 0] = [];

/// Version 1, created in one transaction.
const CREATE: &str = r#"
CREATE TABLE membolt_schema (
    version integer NOT NULL
);
CREATE TABLE membolt_projects (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text COLLATE "C" NOT NULL UNIQUE,
    store_id bytea NOT NULL,
    seq bigint NOT NULL DEFAULT 0,
    clock bigint NOT NULL DEFAULT 0,
    purged_seq bigint NOT NULL DEFAULT 0
);
CREATE TABLE membolt_entries (
    project_id integer NOT NULL REFERENCES membolt_projects (id) ON DELETE CASCADE,
    key text COLLATE "C" NOT NULL,
    value text NOT NULL,
    type text NOT NULL,
    namespace text NOT NULL,
    refs text[] NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    seq bigint NOT NULL,
    deleted boolean NOT NULL,
    checksum bigint NOT NULL,
    PRIMARY KEY (project_id, key)
);
CREATE INDEX membolt_entries_changes ON membolt_entries (project_id, seq);
CREATE VIEW membolt_memory AS
    SELECT p.name AS project, e.key, e.value, e.type, e.namespace, e.refs,
           e.created_at, e.updated_at
    FROM membolt_entries e JOIN membolt_projects p ON p.id = e.project_id
    WHERE NOT e.deleted;
COMMENT ON TABLE membolt_entries IS
    'membolt memory entries; written by membolt only (each row carries a checksum)';
-- Takes a project's write lock (a transaction's, or with whole_session the
-- session's, for hold()) waiting at most wait_ms, then returns the project
-- row as it is now: a statement of its own, so its snapshot is taken after
-- the lock was granted and shows every change committed before.
CREATE FUNCTION membolt_lock_project(project integer, wait_ms integer, whole_session boolean)
RETURNS TABLE (seq bigint, clock bigint, store_id bytea, purged_seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('lock_timeout', wait_ms::text, true);
    IF whole_session THEN
        PERFORM pg_advisory_lock(1835363682, project);
    ELSE
        PERFORM pg_advisory_xact_lock(1835363682, project);
    END IF;
    RETURN QUERY
        SELECT p.seq, p.clock, p.store_id, p.purged_seq
        FROM membolt_projects p WHERE p.id = project;
END
$$;
"#;

/// What [`ensure`] found.
pub(crate) enum Outcome {
    Ready,
    /// The server holds a newer schema.
    Newer(u64),
    /// The server's encoding cannot hold every text.
    NotUtf8(String),
}

/// Checks the server's schema, creating or migrating it (under the schema
/// lock, so two first users do not both create it).
pub(crate) fn ensure(client: &mut Client) -> Result<Outcome, Failure> {
    let row = client.query_one(
        "SELECT current_setting('server_encoding'), to_regclass('membolt_schema') IS NOT NULL",
        &[],
    )?;
    let encoding: String = row.get(0);
    if encoding != "UTF8" {
        return Ok(Outcome::NotUtf8(encoding));
    }
    if row.get::<_, bool>(1) {
        let found = version(client)?;
        if found > SCHEMA_VERSION {
            return Ok(Outcome::Newer(found));
        }
        if found == SCHEMA_VERSION {
            return Ok(Outcome::Ready);
        }
    }
    client.batch_execute("BEGIN")?;
    let outcome = create_or_migrate(client);
    match &outcome {
        Ok(Outcome::Ready) => client.batch_execute("COMMIT")?,
        _ => client.batch_execute("ROLLBACK")?,
    }
    outcome
}

fn version(client: &mut Client) -> Result<u64, Failure> {
    let row = client.query_one("SELECT max(version) FROM membolt_schema", &[])?;
    Ok(row.get::<_, Option<i32>>(0).map_or(0, |v| v.max(0) as u64))
}

fn create_or_migrate(client: &mut Client) -> Result<Outcome, Failure> {
    client.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_CLASS])?;
    let exists: bool = client
        .query_one("SELECT to_regclass('membolt_schema') IS NOT NULL", &[])?
        .get(0);
    let mut found = if exists {
        version(client)?
    } else {
        client.batch_execute(CREATE)?;
        client.execute(
            "INSERT INTO membolt_schema (version) VALUES ($1)",
            &[&(SCHEMA_VERSION as i32)],
        )?;
        SCHEMA_VERSION
    };
    if found > SCHEMA_VERSION {
        return Ok(Outcome::Newer(found));
    }
    while found < SCHEMA_VERSION {
        client.batch_execute(MIGRATIONS[found as usize - 1])?;
        found += 1;
        client.execute("UPDATE membolt_schema SET version = $1", &[&(found as i32)])?;
    }
    Ok(Outcome::Ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_function_uses_the_lock_class() {
        assert_eq!(CREATE.matches(&LOCK_CLASS.to_string()).count(), 2);
    }
}
