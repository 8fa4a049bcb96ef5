//! The builtin functions of the query language as the parser knows them:
//! their names, how many arguments each takes, and which take a predicate.
//! What they do is in `builtins.rs`; the syntax tree refers to them by this
//! enum, so the tree needs nothing of the evaluator.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    All,
    Any,
    Concat,
    Count,
    Filter,
    Find,
    First,
    GroupBy,
    /// `join(left, right, leftField, rightField)`: the relational join.
    Join,
    Keys,
    Last,
    Len,
    Lower,
    Map,
    None,
    One,
    SortBy,
    Split,
    /// `join(list[, sep])`: expr-lang's string join.
    StrJoin,
    Sum,
    Take,
    Trim,
    Union,
    Uniq,
    Upper,
    Values,
}

/// Whether a predicate builtin's predicate may be left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PredicateArg {
    Required,
    Optional,
}

const NAMES: [(&str, Builtin); 25] = [
    ("all", Builtin::All),
    ("any", Builtin::Any),
    ("concat", Builtin::Concat),
    ("count", Builtin::Count),
    ("filter", Builtin::Filter),
    ("find", Builtin::Find),
    ("first", Builtin::First),
    ("groupBy", Builtin::GroupBy),
    ("join", Builtin::Join),
    ("keys", Builtin::Keys),
    ("last", Builtin::Last),
    ("len", Builtin::Len),
    ("lower", Builtin::Lower),
    ("map", Builtin::Map),
    ("none", Builtin::None),
    ("one", Builtin::One),
    ("sortBy", Builtin::SortBy),
    ("split", Builtin::Split),
    ("sum", Builtin::Sum),
    ("take", Builtin::Take),
    ("trim", Builtin::Trim),
    ("union", Builtin::Union),
    ("uniq", Builtin::Uniq),
    ("upper", Builtin::Upper),
    ("values", Builtin::Values),
];

impl Builtin {
    pub fn from_name(name: &str) -> Option<Builtin> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    pub fn name(self) -> &'static str {
        if self == Builtin::StrJoin {
            return "join";
        }
        NAMES
            .iter()
            .find(|(_, b)| *b == self)
            .map_or("?", |(n, _)| n)
    }

    /// Predicate builtins take `(list, predicate, ...)`; the predicate is
    /// parsed in its own scope.
    pub fn predicate_arg(self) -> Option<PredicateArg> {
        match self {
            Builtin::All
            | Builtin::Any
            | Builtin::Filter
            | Builtin::Find
            | Builtin::GroupBy
            | Builtin::Map
            | Builtin::None
            | Builtin::One
            | Builtin::SortBy => Some(PredicateArg::Required),
            Builtin::Count | Builtin::Sum => Some(PredicateArg::Optional),
            _ => None,
        }
    }

    /// Checks the argument count; `join` is resolved to its string or
    /// relational form here.
    pub fn check_arity(self, count: usize) -> Result<Builtin, String> {
        let (min, max) = match self {
            Builtin::Join => {
                return match count {
                    4 => Ok(Builtin::Join),
                    1 | 2 => Ok(Builtin::StrJoin),
                    _ => Err(format!(
                        "join takes 1 or 2 arguments (join strings) or 4 (join relations), \
                         not {count}"
                    )),
                };
            }
            Builtin::Count | Builtin::Sum | Builtin::Trim | Builtin::StrJoin => (1, 2),
            Builtin::SortBy | Builtin::Split => (2, 3),
            Builtin::Concat => (1, usize::MAX),
            Builtin::Union => (2, usize::MAX),
            Builtin::Len
            | Builtin::First
            | Builtin::Last
            | Builtin::Keys
            | Builtin::Values
            | Builtin::Uniq
            | Builtin::Lower
            | Builtin::Upper => (1, 1),
            _ => (2, 2),
        };
        if (min..=max).contains(&count) {
            return Ok(self);
        }
        let expected = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        let plural = if max == 1 { "" } else { "s" };
        Err(format!(
            "{} expects {expected} argument{plural}, not {count}",
            self.name()
        ))
    }
}
