//! Tree-walking evaluator.
//!
//! The environment is a stack of slots mirroring the parser's scopes: a
//! `let` owns one slot, a predicate two (the list it iterates, and the
//! current index; `#` reads the element in place). Each construct
//! truncates the stack to its own slot before pushing and again when done,
//! so a slot index computed at compile time always finds its value.
//!
//! Each node kind is evaluated in its own small function so that deep
//! (but bounded, see `parser::MAX_NESTING`) recursion stays cheap on the
//! stack even in debug builds.

use std::borrow::Cow;
use std::sync::Arc;

use super::ast::{BinaryOp, CompareOp, Expr, ExprKind, MapKey, PostfixOp, Relation};
use super::budget::Budget;
use super::builtins::{self, Evaluate, Predicate};
use super::error::{Pos, RunError, RunResult};
use super::ops;
use super::value::{Map, Value};

pub(crate) struct Evaluator {
    pub budget: Budget,
    env: Vec<Value>,
    memory: Value,
    tool_calls: Value,
    tasks: Value,
}

impl Evaluate for Evaluator {
    fn eval(&mut self, expr: &Expr) -> RunResult<Value> {
        Evaluator::eval(self, expr)
    }

    fn budget(&mut self) -> &mut Budget {
        &mut self.budget
    }

    /// Makes `items` the list `predicate` iterates.
    fn bind(&mut self, predicate: Predicate<'_>, items: &Arc<Vec<Value>>) {
        self.env.truncate(predicate.slot);
        self.env.push(Value::List(items.clone()));
        self.env.push(Value::Int(0));
    }

    /// Runs a predicate on element `index` of its bound list.
    fn apply(&mut self, predicate: Predicate<'_>, index: usize) -> RunResult<Value> {
        self.env.truncate(predicate.slot + 2);
        let index_slot = self.env.get_mut(predicate.slot + 1).ok_or_else(unbound)?;
        *index_slot = Value::Int(index as i64);
        self.eval(predicate.body)
    }

    /// Runs a predicate that must give a bool.
    fn test(&mut self, predicate: Predicate<'_>, index: usize) -> RunResult<bool> {
        match self.apply(predicate, index)? {
            Value::Bool(b) => Ok(b),
            other => Err(RunError::new(format!(
                "predicate must give a bool, not {}",
                other.type_name()
            ))
            .at(predicate.body.pos)),
        }
    }

    /// Drops the predicate's slots once a builtin is done with it.
    fn release(&mut self, predicate: Predicate<'_>) {
        self.env.truncate(predicate.slot);
    }
}

fn unbound() -> RunError {
    RunError::new("internal error: unbound variable slot")
}

impl Evaluator {
    pub fn new(memory: Value, tool_calls: Value, tasks: Value) -> Self {
        Evaluator {
            budget: Budget::default(),
            env: Vec::new(),
            memory,
            tool_calls,
            tasks,
        }
    }

    pub fn eval(&mut self, expr: &Expr) -> RunResult<Value> {
        self.budget.step().map_err(|err| err.at(expr.pos))?;
        let result = match &expr.kind {
            ExprKind::Literal(value) => Ok(value.clone()),
            ExprKind::Slot(slot) => self.env.get(*slot).cloned().ok_or_else(unbound),
            ExprKind::Element(slot) => element(&self.env, *slot).cloned(),
            ExprKind::Relation(relation) => Ok(match relation {
                Relation::Memory => self.memory.clone(),
                Relation::ToolCalls => self.tool_calls.clone(),
                Relation::Tasks => self.tasks.clone(),
            }),
            ExprKind::Array(items) => self.array(items),
            ExprKind::Map(pairs) => self.map(pairs),
            ExprKind::Postfix(base, ops) => self.postfix(base, ops),
            ExprKind::Unary(op, operand) => {
                let value = self.eval(operand)?;
                ops::unary(*op, &value)
            }
            ExprKind::Fold(first, rest) => self.fold(first, rest),
            ExprKind::Compare(first, rest) => self.compare(first, rest),
            ExprKind::Conditional(cond, yes, no) => self.conditional(cond, yes, no),
            ExprKind::Let { slot, value, body } => self.let_binding(*slot, value, body),
            ExprKind::Call { func, args, slot } => builtins::call(self, *func, args, *slot),
        };
        result.map_err(|err| err.at(expr.pos))
    }

    fn array(&mut self, items: &[Expr]) -> RunResult<Value> {
        self.budget.container(items.len())?;
        let values = items
            .iter()
            .map(|item| self.eval(item))
            .collect::<RunResult<Vec<_>>>()?;
        Ok(Value::from(values))
    }

    fn map(&mut self, pairs: &[(MapKey, Expr)]) -> RunResult<Value> {
        self.budget.container(pairs.len())?;
        let mut fields = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            let key = match key {
                MapKey::Fixed(name) => name.clone(),
                MapKey::Computed(expr) => match self.eval(expr)? {
                    Value::Str(name) => name,
                    other => {
                        return Err(RunError::new(format!(
                            "a map key must be a string, not {}",
                            other.type_name()
                        ))
                        .at(expr.pos));
                    }
                },
            };
            fields.push((key, self.eval(value)?));
        }
        Ok(Value::Map(Map::from_pairs(fields)))
    }

    fn postfix(&mut self, base: &Expr, ops: &[PostfixOp]) -> RunResult<Value> {
        // `.field` on a predicate element or a variable reads the field in
        // place instead of copying the whole row first.
        let place = match &base.kind {
            ExprKind::Slot(slot) => Some(self.env.get(*slot).ok_or_else(unbound)),
            ExprKind::Element(slot) => Some(element(&self.env, *slot)),
            _ => None,
        };
        let (mut value, rest) = match (place, ops.split_first()) {
            (
                Some(holder),
                Some((
                    PostfixOp::Member {
                        field,
                        optional,
                        pos,
                    },
                    rest,
                )),
            ) => {
                let holder = holder?;
                if *optional && matches!(holder, Value::Nil) {
                    return Ok(Value::Nil);
                }
                let value = ops::member(holder, field).map_err(|err| err.at(*pos))?;
                self.budget.step().map_err(|err| err.at(base.pos))?;
                (value, rest)
            }
            _ => (self.eval(base)?, ops),
        };
        for op in rest {
            value = match op {
                PostfixOp::Member {
                    field,
                    optional,
                    pos,
                } => {
                    if *optional && matches!(value, Value::Nil) {
                        return Ok(Value::Nil);
                    }
                    ops::member(&value, field).map_err(|err| err.at(*pos))?
                }
                PostfixOp::Index {
                    index,
                    optional,
                    pos,
                } => {
                    if *optional && matches!(value, Value::Nil) {
                        return Ok(Value::Nil);
                    }
                    let index = self.eval(index)?;
                    builtins::index(&value, &index, &mut self.budget).map_err(|err| err.at(*pos))?
                }
                PostfixOp::Slice {
                    from,
                    to,
                    optional,
                    pos,
                } => {
                    if *optional && matches!(value, Value::Nil) {
                        return Ok(Value::Nil);
                    }
                    let from = self.optional(from.as_ref())?;
                    let to = self.optional(to.as_ref())?;
                    builtins::slice(&value, &from, &to, &mut self.budget)
                        .map_err(|err| err.at(*pos))?
                }
            };
        }
        Ok(value)
    }

    /// Evaluates an operand, borrowing a literal from the tree rather than
    /// cloning it (comparisons with constants are the common predicate).
    fn operand<'e>(&mut self, expr: &'e Expr) -> RunResult<Cow<'e, Value>> {
        if let ExprKind::Literal(value) = &expr.kind {
            self.budget.step().map_err(|err| err.at(expr.pos))?;
            return Ok(Cow::Borrowed(value));
        }
        self.eval(expr).map(Cow::Owned)
    }

    fn optional(&mut self, expr: Option<&Expr>) -> RunResult<Value> {
        expr.map_or(Ok(Value::Nil), |expr| self.eval(expr))
    }

    fn fold(&mut self, first: &Expr, rest: &[(BinaryOp, Expr, Pos)]) -> RunResult<Value> {
        let mut acc = self.eval(first)?;
        for (op, right, pos) in rest {
            acc = match (op, &acc) {
                (BinaryOp::And, Value::Bool(false)) | (BinaryOp::Or, Value::Bool(true)) => acc,
                (BinaryOp::And | BinaryOp::Or, Value::Bool(_)) => {
                    let value = self.eval(right)?;
                    if !matches!(value, Value::Bool(_)) {
                        return Err(logic_error(*op, &value).at(right.pos));
                    }
                    value
                }
                (BinaryOp::And | BinaryOp::Or, other) => {
                    return Err(logic_error(*op, other).at(*pos));
                }
                (BinaryOp::Coalesce, Value::Nil) => self.eval(right)?,
                (BinaryOp::Coalesce, _) => acc,
                _ => {
                    let value = self.operand(right)?;
                    ops::binary(*op, &acc, &value, &mut self.budget).map_err(|err| err.at(*pos))?
                }
            };
        }
        Ok(acc)
    }

    fn compare(&mut self, first: &Expr, rest: &[(CompareOp, Expr, Pos)]) -> RunResult<Value> {
        if let [(op, right, pos)] = rest
            && let Some(result) = self.compare_entry_text(first, *op, right)
        {
            return result.map(Value::Bool).map_err(|err| err.at(*pos));
        }
        let mut left = self.operand(first)?;
        for (op, right, pos) in rest {
            let right = self.operand(right)?;
            if !ops::compare(*op, &left, &right, &mut self.budget).map_err(|err| err.at(*pos))? {
                return Ok(Value::Bool(false));
            }
            left = right;
        }
        Ok(Value::Bool(true))
    }

    /// `.field OP "text"` where the element is a `memory` row and `field`
    /// one of its text fields (the typical filter): compares the entry's
    /// text in place, without copying the field out first. `None` for any
    /// other shape or type, which then takes the general path; nothing has
    /// been evaluated by then, so that is equivalent.
    fn compare_entry_text(
        &mut self,
        left: &Expr,
        op: CompareOp,
        right: &Expr,
    ) -> Option<RunResult<bool>> {
        let ExprKind::Literal(Value::Str(text)) = &right.kind else {
            return None;
        };
        let ExprKind::Postfix(base, postfix) = &left.kind else {
            return None;
        };
        let [
            PostfixOp::Member {
                field,
                optional: false,
                ..
            },
        ] = postfix.as_slice()
        else {
            return None;
        };
        let holder = match base.kind {
            ExprKind::Element(slot) => element(&self.env, slot).ok()?,
            ExprKind::Slot(slot) => self.env.get(slot)?,
            _ => return None,
        };
        let Value::Entry(entry) = holder else {
            return None;
        };
        let field_text = field.entry?.text(entry)?;
        // The nodes the general path would have visited: field, row, text.
        let steps = self.budget.steps(3);
        let result = ops::compare_text(op, field_text, text, &mut self.budget)?;
        Some(steps.and(result))
    }

    fn conditional(&mut self, cond: &Expr, yes: &Expr, no: &Expr) -> RunResult<Value> {
        match self.eval(cond)? {
            Value::Bool(true) => self.eval(yes),
            Value::Bool(false) => self.eval(no),
            other => Err(RunError::new(format!(
                "the condition of ?: must be a bool, not {}",
                other.type_name()
            ))
            .at(cond.pos)),
        }
    }

    fn let_binding(&mut self, slot: usize, value: &Expr, body: &Expr) -> RunResult<Value> {
        let value = self.eval(value)?;
        self.env.truncate(slot);
        self.env.push(value);
        let result = self.eval(body);
        self.env.truncate(slot);
        result
    }
}

/// The current element of the predicate whose slots start at `slot`.
fn element(env: &[Value], slot: usize) -> RunResult<&Value> {
    match (env.get(slot), env.get(slot + 1)) {
        (Some(Value::List(items)), Some(Value::Int(i))) => usize::try_from(*i)
            .ok()
            .and_then(|i| items.get(i))
            .ok_or_else(unbound),
        _ => Err(unbound()),
    }
}

fn logic_error(op: BinaryOp, operand: &Value) -> RunError {
    let name = if op == BinaryOp::And { "and" } else { "or" };
    RunError::new(format!(
        "invalid operation: {name} needs bool operands, not {}",
        operand.type_name()
    ))
}
