//! The compiled form of a query.
//!
//! Names are resolved at compile time: `let` variables and predicate
//! elements become environment slots, relations and builtins become enums,
//! and a field name carries its entry-field shortcut. Left-associative
//! operator chains and postfix chains are flat lists, so evaluating them
//! needs no recursion per link.

use std::sync::Arc;

use super::error::Pos;
use super::functions::Builtin;
use super::value::{EntryField, Value};

#[derive(Debug)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub pos: Pos,
    /// Nesting depth, counting a variable or `#` as deep as the expression
    /// it stands for. Bounding it at compile time bounds both the
    /// evaluator's recursion and how deeply nested any value can get.
    pub depth: u32,
}

#[derive(Debug)]
pub(crate) enum ExprKind {
    Literal(Value),
    /// A `let` variable, or a predicate's index (`#index`).
    Slot(usize),
    /// A predicate's element (`#`): item `env[slot + 1]` of the list in
    /// `env[slot]`, read in place rather than copied into the environment
    /// for every element.
    Element(usize),
    Relation(Relation),
    Array(Vec<Expr>),
    Map(Vec<(MapKey, Expr)>),
    /// `base.a?.b[0][1:2]`: applied left to right; a `?.` that meets nil
    /// makes the whole chain nil.
    Postfix(Box<Expr>, Vec<PostfixOp>),
    Unary(UnaryOp, Box<Expr>),
    /// `first op1 e1 op2 e2 ...` folded left to right (`and`, `or` and `??`
    /// evaluate their right side only when needed).
    Fold(Box<Expr>, Vec<(BinaryOp, Expr, Pos)>),
    /// `a < b <= c` means `a < b && b <= c` (expr-lang), evaluated left to
    /// right, stopping at the first false.
    Compare(Box<Expr>, Vec<(CompareOp, Expr, Pos)>),
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `let` binds `slot` to the value while the body runs.
    Let {
        slot: usize,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// A builtin call; for predicate builtins the list being iterated
    /// lives in `slot` and the element's index in `slot + 1` while the
    /// predicate runs.
    Call {
        func: Builtin,
        args: Vec<Expr>,
        slot: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Relation {
    Memory,
    ToolCalls,
    Tasks,
}

#[derive(Debug)]
pub(crate) enum MapKey {
    Fixed(Arc<str>),
    Computed(Expr),
}

/// A field name resolved once: for entry rows the field is a direct match
/// instead of a string comparison per row.
#[derive(Clone, Debug)]
pub(crate) struct FieldName {
    pub name: Arc<str>,
    pub entry: Option<EntryField>,
}

impl FieldName {
    pub fn new(name: &str) -> Self {
        FieldName {
            name: Arc::from(name),
            entry: EntryField::from_name(name),
        }
    }
}

#[derive(Debug)]
pub(crate) enum PostfixOp {
    Member {
        field: FieldName,
        optional: bool,
        pos: Pos,
    },
    Index {
        index: Expr,
        optional: bool,
        pos: Pos,
    },
    Slice {
        from: Option<Expr>,
        to: Option<Expr>,
        optional: bool,
        pos: Pos,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Not,
    Neg,
    Plus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Or,
    And,
    Coalesce,
    Range,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompareOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    In,
    Contains,
    StartsWith,
    EndsWith,
    /// `not in`, `not contains`, ...: the negation of the inner operator.
    Not(Positive),
}

/// The operators `not` may prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Positive {
    In,
    Contains,
    StartsWith,
    EndsWith,
}

impl Positive {
    pub fn op(self) -> CompareOp {
        match self {
            Positive::In => CompareOp::In,
            Positive::Contains => CompareOp::Contains,
            Positive::StartsWith => CompareOp::StartsWith,
            Positive::EndsWith => CompareOp::EndsWith,
        }
    }
}

impl ExprKind {
    /// The deepest direct child (0 for leaves).
    pub fn max_child_depth(&self) -> u32 {
        fn max_of<'e>(exprs: impl IntoIterator<Item = &'e Expr>) -> u32 {
            exprs.into_iter().map(|e| e.depth).max().unwrap_or(0)
        }
        match self {
            ExprKind::Literal(_)
            | ExprKind::Slot(_)
            | ExprKind::Element(_)
            | ExprKind::Relation(_) => 0,
            ExprKind::Array(items) | ExprKind::Call { args: items, .. } => max_of(items),
            ExprKind::Map(pairs) => pairs
                .iter()
                .map(|(key, value)| match key {
                    MapKey::Fixed(_) => value.depth,
                    MapKey::Computed(key) => key.depth.max(value.depth),
                })
                .max()
                .unwrap_or(0),
            ExprKind::Postfix(base, ops) => ops
                .iter()
                .map(|op| match op {
                    PostfixOp::Member { .. } => 0,
                    PostfixOp::Index { index, .. } => index.depth,
                    PostfixOp::Slice { from, to, .. } => max_of(from.iter().chain(to)),
                })
                .fold(base.depth, u32::max),
            ExprKind::Unary(_, operand) => operand.depth,
            ExprKind::Fold(first, rest) => max_of(rest.iter().map(|(_, e, _)| e)).max(first.depth),
            ExprKind::Compare(first, rest) => {
                max_of(rest.iter().map(|(_, e, _)| e)).max(first.depth)
            }
            ExprKind::Conditional(cond, yes, no) => max_of([&**cond, &**yes, &**no]),
            ExprKind::Let { value, body, .. } => value.depth.max(body.depth),
        }
    }
}
