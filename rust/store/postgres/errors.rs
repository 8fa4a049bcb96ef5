//! What a failure of the server or of the connection means for a call, and
//! how its message reads. Every message names the store by its location
//! (host included, password never); none repeats a statement's parameters.

use std::time::Duration;

use postgres::error::{DbError, SqlState};

use crate::error::{Location, StoreError};
use crate::store::medium::Call;

/// A failed exchange with the server, sorted by what the medium does next.
pub(crate) enum Failure {
    /// The connection is gone (refused, reset, closed, the server shutting
    /// down or restarting): reconnect; what the statement did is undone,
    /// unless it was the commit.
    Connection(String),
    /// The lock was not granted before the call's deadline.
    Busy,
    /// Anything else the server refused, with its message.
    Server(String),
    /// A failure that is already the call's error (damage found in a row).
    Store(StoreError),
}

impl Failure {
    /// The error a caller sees; `doing` completes "... was lost" / "... an
    /// error", as in "during a read".
    pub(crate) fn into_store_error(self, store: &Location, call: &Call, doing: &str) -> StoreError {
        match self {
            Failure::Busy => StoreError::Busy {
                store: store.clone(),
                waited: call.started.elapsed(),
            },
            Failure::Connection(detail) => StoreError::io(
                store,
                format!("the connection to the server was lost ({detail}) {doing}"),
            ),
            Failure::Server(detail) => StoreError::io(
                store,
                format!("the server reported an error {doing}: {detail}"),
            ),
            Failure::Store(error) => error,
        }
    }

    pub(crate) fn is_connection(&self) -> bool {
        matches!(self, Failure::Connection(_))
    }
}

impl From<postgres::Error> for Failure {
    fn from(error: postgres::Error) -> Self {
        classify(&error)
    }
}

/// SQLSTATEs that mean the session is over (the server shuts down,
/// restarts, was told to end it, or cannot take connections yet).
fn ends_the_session(code: &SqlState) -> bool {
    code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
            SqlState::IDLE_SESSION_TIMEOUT,
        ]
        .contains(code)
}

fn classify(error: &postgres::Error) -> Failure {
    if let Some(db) = error.as_db_error() {
        if *db.code() == SqlState::LOCK_NOT_AVAILABLE {
            return Failure::Busy;
        }
        if ends_the_session(db.code()) {
            return Failure::Connection(db_text(db));
        }
        return Failure::Server(db_text(db));
    }
    if error.is_closed() {
        return Failure::Connection("the connection was closed".into());
    }
    // Io, Tls, Connect, Timeout, unexpected messages: the session cannot be
    // trusted any more. Encoding or decoding a value is a bug of ours.
    let text = detail(error);
    if text.starts_with("error serializing") || text.starts_with("error deserializing") {
        Failure::Server(text)
    } else {
        Failure::Connection(text)
    }
}

fn db_text(db: &DbError) -> String {
    format!("{} (SQLSTATE {})", db.message(), db.code().code())
}

/// The error and every cause under it, as one line.
pub(crate) fn detail(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let more = inner.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = inner.source();
    }
    text
}

/// How long a call may still wait for a lock, in whole milliseconds (at
/// least one: PostgreSQL reads a `lock_timeout` of 0 as "for ever").
pub(crate) fn wait_ms(call: &Call) -> i32 {
    let left = call
        .deadline
        .saturating_duration_since(std::time::Instant::now());
    left.as_millis().clamp(1, i32::MAX as u128) as i32
}

/// How long connecting may take: what the call has left, but a second at
/// least (connecting is no wait for another process).
pub(crate) fn connect_timeout(call: &Call) -> Duration {
    call.deadline
        .saturating_duration_since(std::time::Instant::now())
        .max(Duration::from_secs(1))
}
