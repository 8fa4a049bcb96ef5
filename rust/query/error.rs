//! Query errors: every failure, from a bad token to an exhausted budget, ends
//! as a `QueryError` (the engine never panics on input text).

use std::fmt;

/// A 1-based (line, column) position in the query text; columns count
/// characters, not bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: u32,
    pub col: u32,
}

/// Which phase failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Compile,
    Run,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    pub kind: ErrorKind,
    pub message: String,
    pub position: Option<(u32, u32)>,
}

impl QueryError {
    pub(crate) fn compile(message: impl Into<String>, pos: Pos) -> Self {
        QueryError {
            kind: ErrorKind::Compile,
            message: message.into(),
            position: Some((pos.line, pos.col)),
        }
    }
}

/// `compile: <message> (line:col)` or `run: <message>[ (line:col)]`; the tool
/// text is `memory_query: ` followed by this.
impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.kind {
            ErrorKind::Compile => "compile",
            ErrorKind::Run => "run",
        };
        write!(f, "{phase}: {}", self.message)?;
        if let Some((line, col)) = self.position {
            write!(f, " ({line}:{col})")?;
        }
        Ok(())
    }
}

impl std::error::Error for QueryError {}

/// A run-time failure inside the evaluator. The position is filled in by the
/// innermost expression node that sees the error without one. Boxed: every
/// evaluation step returns a `RunResult`, and a one-pointer error keeps
/// that result small on the hot path.
#[derive(Clone, Debug)]
pub(crate) struct RunError(Box<RunErrorInner>);

#[derive(Clone, Debug)]
struct RunErrorInner {
    message: String,
    pos: Option<Pos>,
}

impl RunError {
    pub fn new(message: impl Into<String>) -> Self {
        RunError(Box::new(RunErrorInner {
            message: message.into(),
            pos: None,
        }))
    }

    /// Attaches `pos` unless a more precise position is already known.
    pub fn at(mut self, pos: Pos) -> Self {
        self.0.pos.get_or_insert(pos);
        self
    }
}

impl From<RunError> for QueryError {
    fn from(err: RunError) -> Self {
        let RunErrorInner { message, pos } = *err.0;
        QueryError {
            kind: ErrorKind::Run,
            message,
            position: pos.map(|p| (p.line, p.col)),
        }
    }
}

pub(crate) type RunResult<T> = Result<T, RunError>;
