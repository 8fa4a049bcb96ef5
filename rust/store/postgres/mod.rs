//! The PostgreSQL medium (§12): one project's entries in a server's tables,
//! shared by every process of a team on any number of machines.
//!
//! ```text
//! mod.rs (this file)  connection, locks, refresh and write: the Medium
//! address.rs          the postgresql:// URL, the location without password
//! schema.rs           the tables, their version, the lock function
//! statements.rs       every statement, prepared once per connection
//! columns.rs          entries as rows and back, the §14 checksum
//! text.rs             U+0000, which PostgreSQL text cannot hold
//! tls.rs              rustls in libpq's sslmode meanings
//! vectors.rs          the entries' vectors (§15.4), a table of their own
//! errors.rs           failures sorted: reconnect, busy, refused
//! ```
//!
//! # Changes and freshness
//! Every committed change of a project gets the next number of the
//! project's `seq` (under the project's lock, so numbers follow commit
//! order), and every row it wrote carries it; a deletion leaves a tombstone
//! row, so that it reaches other mirrors like a write. A refresh is one
//! statement: the project's row, and the rows with a `seq` above the one the
//! mirror has seen. On an unchanged project that is one round trip
//! returning one row.
//!
//! # Writing
//! A mutation is one transaction: `BEGIN`; the project's lock and its row
//! (`membolt_lock_project`, one round trip); a catch-up if another process
//! wrote since; the rules run on the mirror; one statement writes the
//! changed rows and the project's new `seq` and clock; `COMMIT`. The lock
//! is a transaction-level advisory lock on `(LOCK_CLASS, project id)`:
//! writers of one project are serialised, writers of different projects
//! never wait for each other, readers never wait, and the lock ends with
//! the transaction, whatever ends it (commit, rollback, a dropped
//! connection). A row lock on the project row would do as much for
//! writes, but `hold()` needs a lock that outlives transactions (every
//! write in the block must be durable when it returns); the session-level
//! advisory lock on the same key is that, and it excludes other sessions'
//! transaction locks. So one lock serves both.
//!
//! # Faults
//! Nothing is connected until the first call. A call that finds its
//! connection dead (the server restarted, or ended the session) connects
//! again and repeats what it had done, which committed nothing; a failure
//! of a new connection is the call's error. Inside a `hold()` block the
//! session lock went with the connection, and other processes may have
//! written since: so there the call fails instead, and so does every later
//! call of the block, until it ends (taking the lock again silently would
//! hide that the block's exclusivity was broken). A write that fails leaves the
//! transaction to the server to abort, and the store rolls the mirror back;
//! a connection lost during `COMMIT` leaves the outcome unknown to this
//! process, and its next refresh shows it (the `seq` moved or not).

mod address;
mod columns;
mod errors;
mod image_file;
pub mod schema;
mod statements;
mod text;
mod tls;
mod vectors;

use std::sync::Arc;
use std::time::Instant;

use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, Row};
use tokio_postgres_rustls::MakeRustlsConnect;

pub(crate) use address::Address;
pub use address::is_database_url;
pub use schema::SCHEMA_VERSION;

use crate::entry::{Entry, Interner};
use crate::error::{Location, Result, StoreError};
use crate::random::random_u64;
use crate::store::change_set::ChangeSet;
use crate::store::medium::{Call, Medium};
use crate::store::mirror::Mirror;

use columns::Columns;
use errors::{Failure, connect_timeout, wait_ms};
use schema::LOCK_CLASS;
use statements::Prepared;

/// Every this many changes, a write forgets the tombstones older than
/// [`TOMBSTONE_CHANGES`] changes. A reader that has seen fewer changes than
/// that since its last refresh reloads the project instead.
const PURGE_EVERY: i64 = 1024;
const TOMBSTONE_CHANGES: i64 = 8192;

struct Connection {
    client: Client,
    prepared: Prepared,
}

/// The project's row as a statement read it.
struct ProjectRow {
    seq: i64,
    clock: i64,
    purged_seq: i64,
    store_id: Vec<u8>,
}

pub struct PostgresMedium {
    address: Address,
    project: String,
    location: Location,
    tls: Option<MakeRustlsConnect>,
    connection: Option<Connection>,
    /// The project's id, once it is known to exist.
    project_id: Option<i32>,
    /// The `seq` of the newest change the mirror holds.
    seen: Option<i64>,
    /// A `BEGIN` without its end.
    in_transaction: bool,
    session_lock: SessionLock,
    /// The project's image on this machine (`image_file.rs`), when the
    /// glue named a directory for it.
    image: Option<image_file::LocalImage>,
}

/// The session-level lock `hold()` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SessionLock {
    /// Not taken.
    Free,
    /// Taken by the current connection, the `hold()` call still running.
    Taken,
    /// Taken by the current connection, for an open `hold()` block.
    Held,
    /// The block is open but the connection that held the lock was lost:
    /// every call fails until the block ends.
    Lost,
}

impl SessionLock {
    /// Whether a `hold()` block is open.
    fn in_block(self) -> bool {
        matches!(self, SessionLock::Held | SessionLock::Lost)
    }

    /// Whether the current connection holds the lock.
    fn taken(self) -> bool {
        matches!(self, SessionLock::Taken | SessionLock::Held)
    }
}

impl PostgresMedium {
    /// The medium of the project `project` at `address`; `image_dir`: where
    /// this machine keeps the project's image, if anywhere.
    pub(crate) fn new(
        address: Address,
        project: &str,
        image_dir: Option<&std::path::Path>,
    ) -> PostgresMedium {
        PostgresMedium {
            image: image_dir.map(|dir| image_file::LocalImage::new(dir, &address.server, project)),
            location: address.location(project),
            address,
            project: project.to_string(),
            tls: None,
            connection: None,
            project_id: None,
            seen: None,
            in_transaction: false,
            session_lock: SessionLock::Free,
        }
    }

    // ----- the connection ----------------------------------------------------

    fn connect(&mut self, call: &Call) -> Result<()> {
        if self.connection.is_some() {
            return Ok(());
        }
        let tls = if let Some(tls) = &self.tls {
            tls.clone()
        } else {
            {
                let made =
                    tls::connector(self.address.tls, self.address.root_certificates.as_deref())
                        .map_err(|why| StoreError::io(&self.location, why))?;
                self.tls.insert(made).clone()
            }
        };
        let mut config = self.address.config.clone();
        config.connect_timeout(connect_timeout(call));
        // The server's notices (a table that already exists...) are not
        // the caller's business.
        config.notice_callback(|_| {});
        let mut client = config.connect(tls).map_err(|error| {
            let why = match error.as_db_error() {
                Some(db) => format!("the server refused the connection: {}", db.message()),
                None => errors::detail(&error),
            };
            StoreError::io(&self.location, why)
        })?;
        let outcome = schema::ensure(&mut client).map_err(|f| {
            f.into_store_error(&self.location, call, "while preparing membolt's tables")
        })?;
        match outcome {
            schema::Outcome::Ready => {}
            schema::Outcome::Newer(found) => {
                return Err(StoreError::NewerSchema {
                    store: self.location.clone(),
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            schema::Outcome::NotUtf8(encoding) => {
                return Err(StoreError::io(
                    &self.location,
                    format!("the database's encoding is {encoding}; membolt needs UTF8"),
                ));
            }
        }
        self.connection = Some(Connection {
            client,
            prepared: Prepared::default(),
        });
        Ok(())
    }

    fn disconnect(&mut self) {
        self.session_lock = match self.session_lock {
            SessionLock::Held | SessionLock::Lost => SessionLock::Lost,
            SessionLock::Taken | SessionLock::Free => SessionLock::Free,
        };
        self.connection = None;
        self.in_transaction = false;
    }

    /// The error of every call in a `hold()` block whose lock was lost.
    fn lost_lock(&self) -> StoreError {
        StoreError::io(
            &self.location,
            "the lock of this hold() block was lost with its connection to the server \
             (the server or the network ended the session), so other processes may have \
             written since; nothing more is done in this block: leave it and start again",
        )
    }

    /// `failure` as the call's error; the connection is dropped when it is
    /// broken, and an open transaction is rolled back.
    fn fail(&mut self, failure: Failure, call: &Call, doing: &str) -> StoreError {
        if failure.is_connection() {
            self.disconnect();
        } else {
            self.abort_transaction();
        }
        failure.into_store_error(&self.location, call, doing)
    }

    /// Runs `op` connected. A connection that was open before the call and
    /// turns out dead (the server restarted or ended the session since) is
    /// replaced and `op` run once more: `op` must not have committed.
    fn connected<T>(
        &mut self,
        call: &Call,
        doing: &str,
        mut op: impl FnMut(&mut Self) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        if self.session_lock == SessionLock::Lost {
            return Err(self.lost_lock());
        }
        let reused = self.connection.is_some();
        self.connect(call)?;
        match op(self) {
            Ok(value) => Ok(value),
            Err(failure) if failure.is_connection() && reused => {
                self.disconnect();
                if self.session_lock == SessionLock::Lost {
                    return Err(self.lost_lock());
                }
                self.connect(call)?;
                op(self).map_err(|failure| self.fail(failure, call, doing))
            }
            Err(failure) => Err(self.fail(failure, call, doing)),
        }
    }

    fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> std::result::Result<Vec<Row>, Failure> {
        let connection = self.connection.as_mut().ok_or_else(closed)?;
        let statement = connection.prepared.get(&mut connection.client, sql)?;
        Ok(connection.client.query(&statement, params)?)
    }

    fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> std::result::Result<u64, Failure> {
        let connection = self.connection.as_mut().ok_or_else(closed)?;
        let statement = connection.prepared.get(&mut connection.client, sql)?;
        Ok(connection.client.execute(&statement, params)?)
    }

    fn simple(&mut self, sql: &str) -> std::result::Result<(), Failure> {
        let connection = self.connection.as_mut().ok_or_else(closed)?;
        Ok(connection.client.batch_execute(sql)?)
    }

    fn abort_transaction(&mut self) {
        if self.in_transaction {
            self.in_transaction = false;
            if self.simple("ROLLBACK").is_err() {
                self.disconnect();
            }
        }
    }

    // ----- the project -------------------------------------------------------

    /// The project's id, `None` while it does not exist.
    fn find_project(&mut self) -> std::result::Result<Option<i32>, Failure> {
        if let Some(id) = self.project_id {
            return Ok(Some(id));
        }
        let project = self.project.clone();
        let rows = self.query(statements::FIND_PROJECT, &[&project])?;
        self.project_id = rows.first().map(|row| row.get(0));
        Ok(self.project_id)
    }

    /// The project's id, creating the project if it does not exist.
    fn ensure_project(&mut self) -> std::result::Result<i32, Failure> {
        if let Some(id) = self.find_project()? {
            return Ok(id);
        }
        let mut store_id = Vec::with_capacity(16);
        store_id.extend_from_slice(&random_u64().to_le_bytes());
        store_id.extend_from_slice(&random_u64().to_le_bytes());
        let project = self.project.clone();
        self.execute(statements::CREATE_PROJECT, &[&project, &store_id])?;
        self.find_project()?
            .ok_or_else(|| Failure::Server("the project vanished as it was created".into()))
    }

    /// Takes the project's lock (the transaction's, or the session's) and
    /// reads its row; `Busy` when `call`'s deadline passes first.
    fn lock(
        &mut self,
        id: i32,
        call: &Call,
        whole_session: bool,
    ) -> std::result::Result<ProjectRow, Failure> {
        let rows = self.query(statements::LOCK, &[&id, &wait_ms(call), &whole_session])?;
        let row = rows
            .first()
            .ok_or_else(|| Failure::Server("the project was deleted meanwhile".into()))?;
        Ok(ProjectRow {
            seq: row.get(0),
            clock: row.get(1),
            store_id: row.get(2),
            purged_seq: row.get(3),
        })
    }

    // ----- bringing the mirror up to date --------------------------------------

    /// Whether `mirror` holds exactly the changes up to `project.seq`.
    fn is_current(&self, mirror: Option<&Mirror>, project: &ProjectRow) -> bool {
        mirror.is_some_and(|m| m.store_id == project.store_id) && self.seen == Some(project.seq)
    }

    /// Brings `mirror` up to the project's committed state: the changed rows
    /// when the mirror's position is still covered by the tombstones kept,
    /// every row otherwise.
    fn catch_up(&mut self, mirror: &mut Option<Mirror>) -> std::result::Result<(), Failure> {
        let Some(id) = self.find_project()? else {
            *mirror = Some(Mirror::default());
            self.seen = None;
            return Ok(());
        };
        if mirror.is_none()
            && let Some((base, stamp)) = self.image.as_mut().and_then(image_file::LocalImage::load)
        {
            // A mirror at the image's sequence: the changes since follow.
            *mirror = Some(Mirror::from_image(base, stamp.store_id, i64::MIN));
            self.seen = i64::try_from(stamp.sequence).ok();
        }
        if let (Some(current), Some(seen)) = (mirror.as_mut(), self.seen) {
            let (project, changed) = self.entry_query(statements::CHANGES, &[&id, &seen])?;
            let Some(project) = project else {
                self.project_gone(mirror);
                return Ok(());
            };
            if project.store_id == current.store_id
                && project.purged_seq <= seen
                && seen <= project.seq
            {
                let count = changed.len();
                let delta = changed
                    .into_iter()
                    .map(|(key, entry)| (key, entry.map(Arc::new)));
                current.apply_delta(delta, project.clock);
                self.seen = Some(project.seq);
                if let Some(image) = &mut self.image {
                    image.applied(count);
                }
                return Ok(());
            }
        }
        let (project, loaded) = self.entry_query(statements::EVERYTHING, &[&id])?;
        let Some(project) = project else {
            self.project_gone(mirror);
            return Ok(());
        };
        let mut entries: Vec<Arc<Entry>> = loaded
            .into_iter()
            .filter_map(|(_, entry)| entry.map(Arc::new))
            .collect();
        // Sorted already, unless the server chose another plan: then this
        // sort is what keeps the build cheap.
        entries.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        Mirror::replace(mirror, entries, project.store_id, project.clock);
        self.seen = Some(project.seq);
        if let Some(image) = &mut self.image {
            image.loaded_whole();
        }
        Ok(())
    }

    /// The project's row went away (deleted by hand): an empty store now.
    fn project_gone(&mut self, mirror: &mut Option<Mirror>) {
        self.project_id = None;
        self.seen = None;
        *mirror = Some(Mirror::default());
    }

    /// Runs an entry query (statements.rs): the project's row and the entry
    /// rows, each decoded as it arrives.
    #[allow(clippy::type_complexity)]
    fn entry_query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> std::result::Result<(Option<ProjectRow>, Vec<(Arc<str>, Option<Entry>)>), Failure> {
        let location = self.location.clone();
        let connection = self.connection.as_mut().ok_or_else(closed)?;
        let statement = connection.prepared.get(&mut connection.client, sql)?;
        let mut rows = connection
            .client
            .query_raw(&statement, params.iter().copied())?;
        let mut project = None;
        let mut entries = Vec::new();
        let mut interner = Interner::default();
        while let Some(row) = rows.next()? {
            let key: Option<&str> = row.get(0);
            if key.is_none() {
                project = Some(ProjectRow {
                    seq: row.get(5),
                    clock: row.get(6),
                    purged_seq: row.get(8),
                    store_id: row.get(9),
                });
            } else {
                entries
                    .push(columns::decode(&row, &mut interner, &location).map_err(Failure::Store)?);
            }
        }
        Ok((project, entries))
    }

    // ----- writing -------------------------------------------------------------

    fn begin_locked(
        &mut self,
        mirror: &mut Option<Mirror>,
        call: &Call,
    ) -> std::result::Result<(), Failure> {
        let id = self.ensure_project()?;
        self.simple("BEGIN ISOLATION LEVEL READ COMMITTED")?;
        self.in_transaction = true;
        let project = self.lock(id, call, false)?;
        if !self.is_current(mirror.as_ref(), &project) {
            self.catch_up(mirror)?;
        }
        if mirror.is_none() {
            *mirror = Some(Mirror::default());
        }
        Ok(())
    }

    fn write_locked(&mut self, changes: &ChangeSet) -> std::result::Result<i64, Failure> {
        let id = self.project_id.expect("a write has a project");
        let seq = self.seen.unwrap_or(0) + 1;
        let columns = Columns::of(&changes.changes, changes.clock);
        let written = self.execute(
            statements::WRITE,
            &[
                &id,
                &seq,
                &changes.clock,
                &columns.keys,
                &columns.values,
                &columns.types,
                &columns.namespaces,
                &columns.references,
                &columns.created,
                &columns.updated,
                &columns.deleted,
                &columns.checksums,
            ],
        )?;
        if written != columns.len() as u64 {
            return Err(Failure::Server("the project was deleted meanwhile".into()));
        }
        if seq % PURGE_EVERY == 0 && seq > TOMBSTONE_CHANGES {
            self.execute(statements::PURGE, &[&id, &(seq - TOMBSTONE_CHANGES)])?;
        }
        Ok(seq)
    }
}

fn closed() -> Failure {
    Failure::Connection("not connected".into())
}

impl Medium for PostgresMedium {
    fn location(&self) -> &Location {
        &self.location
    }

    fn refresh(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        self.connected(call, "during a read", |this| this.catch_up(mirror))
    }

    fn begin_write(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        self.connected(call, "during a write; nothing of it was applied", |this| {
            this.abort_transaction();
            this.begin_locked(mirror, call)
        })
    }

    fn write(&mut self, changes: &ChangeSet, _mirror: &Mirror) -> Result<()> {
        let call = Call::new(std::time::Duration::ZERO);
        let seq = match self.write_locked(changes) {
            Ok(seq) => seq,
            Err(failure) => {
                return Err(self.fail(failure, &call, "during a write; nothing of it was applied"));
            }
        };
        self.in_transaction = false;
        if let Err(failure) = self.simple("COMMIT") {
            let doing = if failure.is_connection() {
                "during the commit of a write; whether it was applied shows on the next call"
            } else {
                "during a write; nothing of it was applied"
            };
            return Err(self.fail(failure, &call, doing));
        }
        self.seen = Some(seq);
        Ok(())
    }

    fn end_write(&mut self) {
        self.abort_transaction();
    }

    fn hold(&mut self, mirror: &mut Option<Mirror>, call: &Call) -> Result<()> {
        if self.session_lock.in_block() {
            return self.refresh(mirror, call);
        }
        let outcome = self.connected(call, "while taking the lock", |this| {
            if !this.session_lock.taken() {
                let id = this.ensure_project()?;
                let project = this.lock(id, call, true)?;
                this.session_lock = SessionLock::Taken;
                if this.is_current(mirror.as_ref(), &project) {
                    return Ok(());
                }
            }
            this.catch_up(mirror)
        });
        match outcome {
            Ok(()) => self.session_lock = SessionLock::Held,
            Err(_) => self.release(None),
        }
        outcome
    }

    fn holds_lock(&self) -> bool {
        self.session_lock.in_block()
    }

    /// Nothing is kept locked between calls, except in a `hold()` block.
    fn after_call(&mut self, _mirror: Option<&Mirror>) {}

    fn release_if_idle(&mut self, _now: Instant, _mirror: Option<&Mirror>) -> bool {
        self.session_lock.in_block()
    }

    fn release(&mut self, mirror: Option<&Mirror>) {
        if let (Some(mirror), Some(seq), Some(image)) = (mirror, self.seen, &mut self.image)
            && !mirror.store_id.is_empty()
            && !self.in_transaction
        {
            image.write_if_due(mirror, seq);
        }
        self.abort_transaction();
        let taken = self.session_lock.taken();
        self.session_lock = SessionLock::Free;
        if !taken {
            return;
        }
        let unlocked = match self.project_id {
            Some(id) => self
                .execute(statements::UNLOCK, &[&LOCK_CLASS, &id])
                .is_ok(),
            None => false,
        };
        if !unlocked {
            // Ending the session ends its locks.
            self.disconnect();
        }
    }

    fn forget_inherited(&mut self) {
        // The parent still uses the socket: neither close nor roll back.
        if let Some(connection) = self.connection.take() {
            std::mem::forget(connection);
        }
        self.in_transaction = false;
        self.session_lock = SessionLock::Free;
        self.seen = None;
    }

    fn vector_source(&mut self) -> Option<&mut dyn crate::store::vectors::VectorSource> {
        Some(self)
    }

    fn distrust(&mut self) {
        self.disconnect();
        self.session_lock = SessionLock::Free;
        self.seen = None;
        self.project_id = None;
    }
}

impl Drop for PostgresMedium {
    fn drop(&mut self) {
        self.release(None);
    }
}
