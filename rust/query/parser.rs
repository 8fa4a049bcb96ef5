//! Parser: tokens to the resolved AST of `ast.rs`. One concept, kept in one
//! file although long: the grammar reads best in one place.
//!
//! The grammar, precedences and quirks follow expr-lang's own parser
//! (precedence climbing; comparisons chain; `??` does not mix with other
//! operators; `?:` is recognised only at the outermost level of an
//! expression). Differences: a `{` in predicate position is a map literal
//! when it looks like one (`{key: ...}`), else a closure; and names are
//! resolved here, so an unknown name or function is a compile error.
//!
//! Nesting (§9.3: deeper than 100 is a compile error) is bounded
//! twice. While parsing, every sub-expression parsed inside another (an
//! operand, an argument, an element, a bracketed group) is one level
//! deeper, which bounds the parser's own recursion. Each node built also
//! records its depth, counting a variable or `#` as deep as the expression
//! it stands for; bounding that bounds the evaluator's recursion and how
//! deeply any value can nest (so printing, comparing and dropping values
//! cannot exhaust the stack either). Long flat chains (`a + b + c ...`,
//! `a.b.c ...`) are single nodes and do not count as nesting.

use std::sync::Arc;

use super::ast::{
    BinaryOp, CompareOp, Expr, ExprKind, FieldName, MapKey, Positive, PostfixOp, Relation, UnaryOp,
};
use super::error::{Pos, QueryError};
use super::functions::{Builtin, PredicateArg};
use super::lexer::{Tok, Token, tokenize};
use super::value::Value;

/// Deepest nesting a query may have (§9.3).
pub(crate) const MAX_NESTING: u32 = 100;

/// Value depth assumed for a relation: list, row, field value (the
/// `references` list), its strings.
const RELATION_DEPTH: u32 = 3;

type PResult<T> = Result<T, QueryError>;

pub(crate) struct Parsed {
    pub root: Expr,
    pub uses_memory: bool,
}

pub(crate) fn parse(src: &str) -> PResult<Parsed> {
    let tokens = tokenize(src)?;
    let eof = tokens.last().cloned().unwrap_or(Token {
        tok: Tok::Eof,
        text: "",
        pos: Pos { line: 1, col: 1 },
    });
    let mut parser = Parser {
        tokens,
        eof,
        at: 0,
        nesting: 0,
        scopes: Vec::new(),
        uses_memory: false,
    };
    let root = parser.expression(0)?;
    if parser.current().tok != Tok::Eof {
        return Err(parser.unexpected());
    }
    Ok(Parsed {
        root,
        uses_memory: parser.uses_memory,
    })
}

/// A name in scope; its index in `Parser::scopes` is its environment slot.
enum Scope<'a> {
    Let { name: &'a str, depth: u32 },
    Element { depth: u32 },
    Index,
}

struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    /// Returned for any position past the end, so lookahead never fails.
    eof: Token<'a>,
    at: usize,
    /// Current recursion depth of `expression`.
    nesting: u32,
    scopes: Vec<Scope<'a>>,
    uses_memory: bool,
}

/// What a token in operator position means.
enum Operator {
    Pipe,
    Binary(BinaryOp),
    Compare(CompareOp),
}

struct OperatorInfo {
    op: Operator,
    precedence: u16,
    right_assoc: bool,
    /// 2 for `not in` and friends.
    tokens: usize,
}

const RESERVED: [&str; 12] = [
    "true",
    "false",
    "nil",
    "let",
    "and",
    "or",
    "not",
    "in",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
];

fn too_deep(pos: Pos) -> QueryError {
    QueryError::compile(
        format!("expression is nested too deeply (more than {MAX_NESTING} levels)"),
        pos,
    )
}

fn negatable(word: &str) -> Option<Positive> {
    match word {
        "in" => Some(Positive::In),
        "contains" => Some(Positive::Contains),
        "startsWith" => Some(Positive::StartsWith),
        "endsWith" => Some(Positive::EndsWith),
        _ => None,
    }
}

impl<'a> Parser<'a> {
    fn token(&self, index: usize) -> &Token<'a> {
        self.tokens.get(index).unwrap_or(&self.eof)
    }

    fn current(&self) -> &Token<'a> {
        self.token(self.at)
    }

    fn advance(&mut self) {
        if self.at < self.tokens.len() {
            self.at += 1;
        }
    }

    fn eat(&mut self, punct: &str) -> bool {
        let found = self.current().is(punct);
        if found {
            self.advance();
        }
        found
    }

    fn expect(&mut self, punct: &str) -> PResult<()> {
        if self.eat(punct) {
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn unexpected(&self) -> QueryError {
        let token = self.current();
        QueryError::compile(format!("unexpected {}", token.describe()), token.pos)
    }

    // ---- expressions ---------------------------------------------------

    fn expression(&mut self, min_precedence: u16) -> PResult<Expr> {
        self.nesting += 1;
        // The outermost call is level 0; each nested call is one level.
        if self.nesting > MAX_NESTING + 1 {
            return Err(too_deep(self.current().pos));
        }
        let result = self.expression_body(min_precedence);
        self.nesting -= 1;
        result
    }

    fn expression_body(&mut self, min_precedence: u16) -> PResult<Expr> {
        if min_precedence == 0 && self.current().is_word("let") {
            return self.let_binding();
        }
        let mut left = self.primary()?;
        let mut fold: Vec<(BinaryOp, Expr, Pos)> = Vec::new();
        let mut after_coalesce = false;
        while let Some(info) = self.operator()? {
            if info.precedence < min_precedence {
                break;
            }
            let op_token = self.current().clone();
            let is_coalesce = matches!(info.op, Operator::Binary(BinaryOp::Coalesce));
            if after_coalesce && !is_coalesce {
                return Err(QueryError::compile(
                    format!(
                        "operator {} and ?? cannot be mixed; wrap either in parentheses",
                        op_token.text
                    ),
                    op_token.pos,
                ));
            }
            for _ in 0..info.tokens {
                self.advance();
            }
            match info.op {
                Operator::Pipe => {
                    left = flush(left, &mut fold)?;
                    let name = self.current().clone();
                    if name.tok != Tok::Word {
                        return Err(self.unexpected());
                    }
                    self.advance();
                    if !self.current().is("(") {
                        return Err(self.unexpected());
                    }
                    left = self.call(&name, Some(left))?;
                }
                Operator::Compare(op) => {
                    left = flush(left, &mut fold)?;
                    left = self.comparison(left, op, op_token.pos)?;
                }
                Operator::Binary(op) => {
                    let next = if info.right_assoc {
                        info.precedence
                    } else {
                        info.precedence + 1
                    };
                    let right = self.expression(next)?;
                    fold.push((op, right, op_token.pos));
                }
            }
            after_coalesce = is_coalesce;
        }
        left = flush(left, &mut fold)?;
        if min_precedence == 0 {
            left = self.conditional(left)?;
        }
        Ok(left)
    }

    /// The operator at the current token, if it is one.
    fn operator(&self) -> PResult<Option<OperatorInfo>> {
        let token = self.current();
        let info = |op, precedence| {
            Some(OperatorInfo {
                op,
                precedence,
                right_assoc: false,
                tokens: 1,
            })
        };
        let found = match (&token.tok, token.text) {
            (Tok::Punct(_), "|") => info(Operator::Pipe, 0),
            (Tok::Punct(_), "||") | (Tok::Word, "or") => info(Operator::Binary(BinaryOp::Or), 10),
            (Tok::Punct(_), "&&") | (Tok::Word, "and") => info(Operator::Binary(BinaryOp::And), 15),
            (Tok::Punct(_), "..") => info(Operator::Binary(BinaryOp::Range), 25),
            (Tok::Punct(_), "+") => info(Operator::Binary(BinaryOp::Add), 30),
            (Tok::Punct(_), "-") => info(Operator::Binary(BinaryOp::Sub), 30),
            (Tok::Punct(_), "*") => info(Operator::Binary(BinaryOp::Mul), 60),
            (Tok::Punct(_), "/") => info(Operator::Binary(BinaryOp::Div), 60),
            (Tok::Punct(_), "%") => info(Operator::Binary(BinaryOp::Mod), 60),
            (Tok::Punct(_), "**" | "^") => Some(OperatorInfo {
                op: Operator::Binary(BinaryOp::Pow),
                precedence: 100,
                right_assoc: true,
                tokens: 1,
            }),
            (Tok::Punct(_), "??") => info(Operator::Binary(BinaryOp::Coalesce), 500),
            _ => self
                .comparison_operator()?
                .map(|(op, tokens)| OperatorInfo {
                    op: Operator::Compare(op),
                    precedence: 20,
                    right_assoc: false,
                    tokens,
                }),
        };
        Ok(found)
    }

    /// A comparison operator at the current token, with its token count.
    fn comparison_operator(&self) -> PResult<Option<(CompareOp, usize)>> {
        let token = self.current();
        let op = match (&token.tok, token.text) {
            (Tok::Punct(_), "==") => CompareOp::Eq,
            (Tok::Punct(_), "!=") => CompareOp::Ne,
            (Tok::Punct(_), "<") => CompareOp::Lt,
            (Tok::Punct(_), ">") => CompareOp::Gt,
            (Tok::Punct(_), "<=") => CompareOp::Le,
            (Tok::Punct(_), ">=") => CompareOp::Ge,
            (Tok::Word, "matches") => return Err(matches_unsupported(token.pos)),
            (Tok::Word, "not") => {
                let next = self.token(self.at + 1);
                if next.is_word("matches") {
                    return Err(matches_unsupported(next.pos));
                }
                return match negatable(next.text).filter(|_| next.tok == Tok::Word) {
                    Some(positive) => Ok(Some((CompareOp::Not(positive), 2))),
                    None => Err(QueryError::compile(
                        format!("unexpected {}", next.describe()),
                        next.pos,
                    )),
                };
            }
            (Tok::Word, word) => match negatable(word) {
                Some(positive) => positive.op(),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        Ok(Some((op, 1)))
    }

    fn comparison(&mut self, first: Expr, op: CompareOp, pos: Pos) -> PResult<Expr> {
        let start = first.pos;
        let mut links = Vec::new();
        let (mut op, mut pos) = (op, pos);
        loop {
            let right = self.expression(21)?;
            links.push((op, right, pos));
            match self.comparison_operator()? {
                Some((next, tokens)) => {
                    pos = self.current().pos;
                    op = next;
                    for _ in 0..tokens {
                        self.advance();
                    }
                }
                None => break,
            }
        }
        node(ExprKind::Compare(Box::new(first), links), start)
    }

    fn conditional(&mut self, cond: Expr) -> PResult<Expr> {
        if !self.current().is("?") {
            return Ok(cond);
        }
        let pos = self.current().pos;
        self.advance();
        let yes = self.expression(0)?;
        self.expect(":")?;
        let no = self.expression(0)?;
        node(
            ExprKind::Conditional(Box::new(cond), Box::new(yes), Box::new(no)),
            pos,
        )
    }

    fn let_binding(&mut self) -> PResult<Expr> {
        let pos = self.current().pos;
        self.advance();
        let name = self.current().clone();
        if name.tok != Tok::Word {
            return Err(self.unexpected());
        }
        if RESERVED.contains(&name.text) {
            return Err(QueryError::compile(
                format!("{} is a reserved word", name.text),
                name.pos,
            ));
        }
        self.advance();
        self.expect("=")?;
        let value = self.expression(0)?;
        self.expect(";")?;
        let slot = self.scopes.len();
        self.scopes.push(Scope::Let {
            name: name.text,
            depth: value.depth,
        });
        let body = self.expression(0);
        self.scopes.pop();
        let kind = ExprKind::Let {
            slot,
            value: Box::new(value),
            body: Box::new(body?),
        };
        node(kind, pos)
    }

    // ---- primaries -----------------------------------------------------

    fn primary(&mut self) -> PResult<Expr> {
        let token = self.current().clone();
        let unary = match (&token.tok, token.text) {
            (Tok::Punct(_), "!") | (Tok::Word, "not") => Some((UnaryOp::Not, 50)),
            (Tok::Punct(_), "-") => Some((UnaryOp::Neg, 90)),
            (Tok::Punct(_), "+") => Some((UnaryOp::Plus, 90)),
            _ => None,
        };
        if let Some((op, precedence)) = unary {
            self.advance();
            let operand = self.expression(precedence)?;
            let node = node(ExprKind::Unary(op, Box::new(operand)), token.pos)?;
            return self.postfix(node);
        }
        if token.is("(") {
            self.advance();
            let inner = self.expression(0)?;
            self.expect(")")?;
            return self.postfix(inner);
        }
        if token.tok == Tok::Pointer || token.is(".") {
            let node = self.pointer(&token)?;
            return self.postfix(node);
        }
        let node = self.secondary(&token)?;
        self.postfix(node)
    }

    /// `#`, `#index`, or the implicit `#` of `.field` (the `.` is left for
    /// the postfix loop, which reads it as member access).
    fn pointer(&mut self, token: &Token<'a>) -> PResult<Expr> {
        let element = self
            .scopes
            .iter()
            .rposition(|scope| matches!(scope, Scope::Element { .. }));
        let Some(slot) = element else {
            let what = if token.is(".") { ".field" } else { token.text };
            return Err(QueryError::compile(
                format!("{what} can only be used inside a predicate"),
                token.pos,
            ));
        };
        let depth = match self.scopes.get(slot) {
            Some(Scope::Element { depth }) => *depth,
            _ => 0,
        };
        match token.text {
            "." => sized(ExprKind::Element(slot), token.pos, depth),
            "#" => {
                self.advance();
                sized(ExprKind::Element(slot), token.pos, depth)
            }
            "#index" => {
                self.advance();
                slot_node(slot + 1, 0, token.pos)
            }
            other => Err(QueryError::compile(
                format!("unknown pointer {other}"),
                token.pos,
            )),
        }
    }

    fn secondary(&mut self, token: &Token<'a>) -> PResult<Expr> {
        let literal = match &token.tok {
            Tok::Int(n) => Value::Int(*n),
            Tok::Float(f) => Value::Float(*f),
            Tok::Str(s) => Value::Str(Arc::from(s.as_str())),
            Tok::Word => match token.text {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "nil" => Value::Nil,
                word if RESERVED.contains(&word) => return Err(self.unexpected()),
                _ => {
                    self.advance();
                    if self.current().is("(") {
                        return self.call(token, None);
                    }
                    return self.identifier(token);
                }
            },
            Tok::Punct("[") => return self.array(token.pos),
            Tok::Punct("{") => return self.map_literal(token.pos),
            _ => return Err(self.unexpected()),
        };
        self.advance();
        node(ExprKind::Literal(literal), token.pos)
    }

    fn identifier(&mut self, token: &Token<'a>) -> PResult<Expr> {
        let bound = self
            .scopes
            .iter()
            .enumerate()
            .rev()
            .find_map(|(slot, scope)| match scope {
                Scope::Let { name, depth } if *name == token.text => Some((slot, *depth)),
                _ => None,
            });
        if let Some((slot, depth)) = bound {
            return slot_node(slot, depth, token.pos);
        }
        let relation = match token.text {
            "memory" => {
                self.uses_memory = true;
                Relation::Memory
            }
            "tool_calls" => Relation::ToolCalls,
            "tasks" => Relation::Tasks,
            other => {
                return Err(QueryError::compile(
                    format!("unknown name {other}"),
                    token.pos,
                ));
            }
        };
        node(ExprKind::Relation(relation), token.pos)
    }

    fn array(&mut self, pos: Pos) -> PResult<Expr> {
        self.advance();
        let mut items = Vec::new();
        while !self.current().is("]") {
            if !items.is_empty() {
                self.expect(",")?;
                if self.current().is("]") {
                    break;
                }
            }
            items.push(self.expression(0)?);
        }
        self.advance();
        node(ExprKind::Array(items), pos)
    }

    fn map_literal(&mut self, pos: Pos) -> PResult<Expr> {
        self.advance();
        let mut pairs = Vec::new();
        while !self.current().is("}") {
            if !pairs.is_empty() {
                self.expect(",")?;
                if self.current().is("}") {
                    break;
                }
            }
            let token = self.current().clone();
            let key = match &token.tok {
                Tok::Word | Tok::Int(_) | Tok::Float(_) => {
                    self.advance();
                    MapKey::Fixed(Arc::from(token.text))
                }
                Tok::Str(s) => {
                    self.advance();
                    MapKey::Fixed(Arc::from(s.as_str()))
                }
                Tok::Punct("(") => {
                    self.advance();
                    let key = self.expression(0)?;
                    self.expect(")")?;
                    MapKey::Computed(key)
                }
                _ => {
                    return Err(QueryError::compile(
                        format!(
                            "a map key must be a name, a string, a number or a parenthesized \
                             expression, not {}",
                            token.describe()
                        ),
                        token.pos,
                    ));
                }
            };
            self.expect(":")?;
            pairs.push((key, self.expression(0)?));
        }
        self.advance();
        node(ExprKind::Map(pairs), pos)
    }

    /// Whether the `{` at the current token opens a map literal (`{}`,
    /// `{name: ...}`, `{"k": ...}`, `{1: ...}`, `{(expr): ...}`) rather than
    /// a closure. Decided by lookahead, which is what "try a map literal
    /// first" amounts to without re-parsing anything.
    fn brace_starts_map(&self) -> bool {
        let next = self.token(self.at + 1);
        match next.tok {
            Tok::Punct("}") => true,
            Tok::Word | Tok::Int(_) | Tok::Float(_) | Tok::Str(_) => {
                self.token(self.at + 2).is(":")
            }
            Tok::Punct("(") => {
                let mut open = 0usize;
                for index in self.at + 1..self.tokens.len() {
                    let token = self.token(index);
                    if token.is("(") {
                        open += 1;
                    } else if token.is(")") {
                        open = open.saturating_sub(1);
                        if open == 0 {
                            return self.token(index + 1).is(":");
                        }
                    }
                }
                false
            }
            _ => false,
        }
    }

    // ---- postfix -------------------------------------------------------

    fn postfix(&mut self, base: Expr) -> PResult<Expr> {
        let mut ops = Vec::new();
        loop {
            let token = self.current().clone();
            let optional = token.is("?.");
            if optional || token.is(".") {
                self.advance();
                if optional && self.current().is("[") {
                    ops.push(self.index(true)?);
                    continue;
                }
                let name = self.current().clone();
                if name.tok != Tok::Word {
                    return Err(QueryError::compile("expected a field name", name.pos));
                }
                self.advance();
                if self.current().is("(") {
                    return Err(QueryError::compile(
                        "method calls are not supported; use a builtin function",
                        name.pos,
                    ));
                }
                ops.push(PostfixOp::Member {
                    field: FieldName::new(name.text),
                    optional,
                    pos: name.pos,
                });
            } else if token.is("[") {
                ops.push(self.index(false)?);
            } else {
                break;
            }
        }
        if ops.is_empty() {
            return Ok(base);
        }
        let pos = base.pos;
        node(ExprKind::Postfix(Box::new(base), ops), pos)
    }

    /// `[i]`, `[from:to]`, `[:to]`, `[from:]`, `[:]` at the current `[`.
    fn index(&mut self, optional: bool) -> PResult<PostfixOp> {
        let pos = self.current().pos;
        self.advance();
        let from = if self.current().is(":") {
            None
        } else {
            Some(self.expression(0)?)
        };
        if !self.eat(":") {
            self.expect("]")?;
            return match from {
                Some(index) => Ok(PostfixOp::Index {
                    index,
                    optional,
                    pos,
                }),
                None => Err(self.unexpected()),
            };
        }
        let to = if self.current().is("]") {
            None
        } else {
            Some(self.expression(0)?)
        };
        self.expect("]")?;
        Ok(PostfixOp::Slice {
            from,
            to,
            optional,
            pos,
        })
    }

    // ---- calls ---------------------------------------------------------

    /// A builtin call at `name` (the current token is its `(`); `piped` is
    /// the left side of `x | name(...)`, which becomes the first argument.
    fn call(&mut self, name: &Token<'a>, piped: Option<Expr>) -> PResult<Expr> {
        let Some(func) = Builtin::from_name(name.text) else {
            return Err(QueryError::compile(
                format!("unknown function {}", name.text),
                name.pos,
            ));
        };
        self.advance();
        let mut args: Vec<Expr> = piped.into_iter().collect();
        let slot = self.scopes.len();
        match func.predicate_arg() {
            Some(kind) => self.predicate_args(func, kind, &mut args)?,
            None => self.plain_args(&mut args)?,
        }
        let func = func
            .check_arity(args.len())
            .map_err(|message| QueryError::compile(message, name.pos))?;
        if func == Builtin::SortBy
            && let Some(key) = args.get_mut(1)
        {
            field_name_predicate(key, slot);
        }
        node(ExprKind::Call { func, args, slot }, name.pos)
    }

    fn plain_args(&mut self, args: &mut Vec<Expr>) -> PResult<()> {
        let first = args.len();
        while !self.current().is(")") {
            if args.len() > first {
                self.expect(",")?;
                if self.current().is(")") {
                    break;
                }
            }
            args.push(self.expression(0)?);
        }
        self.advance();
        Ok(())
    }

    /// `f(list, predicate, more...)`, where `list` may have come from a pipe.
    fn predicate_args(
        &mut self,
        func: Builtin,
        kind: PredicateArg,
        args: &mut Vec<Expr>,
    ) -> PResult<()> {
        if args.is_empty() {
            if self.current().is(")") {
                return Err(QueryError::compile(
                    format!("{} needs a list argument", func.name()),
                    self.current().pos,
                ));
            }
            args.push(self.expression(0)?);
            if !self.current().is(")") {
                self.expect(",")?;
            }
        }
        if self.current().is(")") {
            if kind == PredicateArg::Required {
                return Err(QueryError::compile(
                    format!("{} needs a predicate", func.name()),
                    self.current().pos,
                ));
            }
            self.advance();
            return Ok(());
        }
        let predicate = self.predicate(args)?;
        args.push(predicate);
        while self.eat(",") {
            if self.current().is(")") {
                break;
            }
            args.push(self.expression(0)?);
        }
        self.expect(")")
    }

    /// A predicate: bare (`.a > 1`), a closure (`{# > 1}`), or an
    /// expression starting with a map literal (`{key: .key}`). Its element
    /// and index get the next two slots.
    fn predicate(&mut self, args: &[Expr]) -> PResult<Expr> {
        let depth = args.first().map_or(0, |list| list.depth);
        self.scopes.push(Scope::Element { depth });
        self.scopes.push(Scope::Index);
        let body = if self.current().is("{") && !self.brace_starts_map() {
            self.advance();
            self.expression(0).and_then(|body| {
                self.expect("}")?;
                Ok(body)
            })
        } else {
            self.expression(0)
        };
        self.scopes.truncate(self.scopes.len().saturating_sub(2));
        body
    }
}

/// Builds a node, enforcing the nesting limit on its depth.
fn node(kind: ExprKind, pos: Pos) -> PResult<Expr> {
    let extra = match kind {
        // A builtin may nest its result two levels deeper than its
        // arguments (`groupBy`, `join` rows).
        ExprKind::Call { .. } => 2,
        ExprKind::Relation(_) => RELATION_DEPTH,
        // Leaves; slots are built by `sized` with the depth they stand for.
        ExprKind::Literal(_) | ExprKind::Slot(_) | ExprKind::Element(_) => 0,
        _ => 1,
    };
    sized(kind, pos, extra)
}

/// Builds a node `extra` levels deeper than its deepest child.
fn sized(kind: ExprKind, pos: Pos, extra: u32) -> PResult<Expr> {
    let depth = kind.max_child_depth() + extra;
    if depth > MAX_NESTING {
        return Err(too_deep(pos));
    }
    Ok(Expr { kind, pos, depth })
}

fn slot_node(slot: usize, depth: u32, pos: Pos) -> PResult<Expr> {
    sized(ExprKind::Slot(slot), pos, depth)
}

/// Turns `left` plus pending left-associative links into one node.
fn flush(left: Expr, fold: &mut Vec<(BinaryOp, Expr, Pos)>) -> PResult<Expr> {
    if fold.is_empty() {
        return Ok(left);
    }
    let pos = left.pos;
    node(ExprKind::Fold(Box::new(left), std::mem::take(fold)), pos)
}

fn matches_unsupported(pos: Pos) -> QueryError {
    QueryError::compile("the matches operator is not supported", pos)
}

/// `sortBy(xs, "name")` (the form of older expr-lang docs) sorts by the field
/// `name`: a constant sort key would be useless, so a string literal key is
/// read as a field name.
fn field_name_predicate(key: &mut Expr, slot: usize) {
    if let ExprKind::Literal(Value::Str(name)) = &key.kind {
        let field = FieldName::new(name);
        let pos = key.pos;
        let element = Expr {
            kind: ExprKind::Element(slot),
            pos,
            depth: key.depth,
        };
        key.kind = ExprKind::Postfix(
            Box::new(element),
            vec![PostfixOp::Member {
                field,
                optional: false,
                pos,
            }],
        );
    }
}
