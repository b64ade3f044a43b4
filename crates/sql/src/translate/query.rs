//! Queries: sqlparser's `Query` -> our [`Query`] (the query engine's input): SELECT blocks with
//! any FROM clause (comma lists, `JOIN .. ON / USING`, `NATURAL`, LEFT/RIGHT, STRAIGHT_JOIN,
//! derived tables), `UNION [ALL]`, subqueries in expressions (scalar, `IN`, `EXISTS`,
//! `ANY/SOME/ALL`), aggregates, GROUP BY / HAVING / ORDER BY / LIMIT and row locks.
//!
//! Unlike the single-table translators, column references keep their qualifier
//! ([`Expr::QColumn`]) and aggregates stay in the expression ([`Expr::Aggregate`]): the query
//! engine's binder resolves names against the FROM clause and outer queries, so nothing is
//! decided by name here. `?` placeholders are numbered in textual order across the whole
//! statement, subqueries included (clauses are visited in the order they are written).

use sqlparser::ast as sp;

use super::expr::{call_args, expr, ExprScope};
use super::names::SourceText;
use crate::ast::*;
use crate::error::SqlError;

fn unsupported(what: impl Into<String>) -> SqlError {
    SqlError::Unsupported(what.into())
}

/// The expression context of a query: qualified columns, aggregates and subqueries kept.
struct QueryScope<'s, 'a> {
    src: &'s SourceText<'a>,
    /// `?` placeholders seen so far in the statement.
    params: &'s mut usize,
    /// The common table expressions in scope, innermost last.
    ctes: Vec<Cte>,
    /// How many subqueries and CTE definitions enclose the text being translated.
    depth: usize,
    /// The one SELECT that may have an `INTO @var` clause: the statement's own, when it is
    /// not a set operation (elsewhere MariaDB answers a syntax error).
    into_select: Option<*const sp::Select>,
}

/// A common table expression in scope.
struct Cte {
    name: String,
    def: CteDef,
}

enum CteDef {
    /// A CTE that does not read itself: each reference is a derived table of its query.
    Plain { query: Query, columns: Vec<String> },
    /// A recursive CTE, complete.
    Recursive(RecursiveCte),
    /// A `WITH RECURSIVE` CTE whose own members are being translated: a reference is its work
    /// table, allowed only at `depth` (in a member's FROM clause or a derived table there, not
    /// inside a subquery: 4008 as in MariaDB).
    Own { depth: usize, refs: usize },
}

/// 4008: a recursive CTE's reference where MariaDB does not allow one (a subquery, the
/// null-supplying side of an outer join, a grouped step).
pub fn restriction_violated(name: &str) -> SqlError {
    SqlError::coded(
        shoal_errors::ER_NOT_STANDARD_COMPLIANT_RECURSIVE,
        format!("Restrictions imposed on recursive definitions are violated for table '{name}'"),
    )
}

impl QueryScope<'_, '_> {
    /// Runs `f` one subquery level deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// The CTE a table name written without a database refers to, innermost first.
    fn cte(&mut self, name: &str) -> Option<&mut Cte> {
        self.ctes.iter_mut().rev().find(|c| c.name == name)
    }

    /// How many times the CTE being defined has been referenced.
    fn own_refs(&self) -> usize {
        match self.ctes.last().map(|c| &c.def) {
            Some(CteDef::Own { refs, .. }) => *refs,
            _ => 0,
        }
    }
}

impl ExprScope for QueryScope<'_, '_> {
    fn next_param(&mut self) -> usize {
        *self.params += 1;
        *self.params - 1
    }

    fn column(&mut self, qualifier: Option<&str>, name: &str) -> Result<Expr, SqlError> {
        Ok(Expr::QColumn(
            qualifier.map(str::to_string),
            name.to_string(),
        ))
    }

    fn subquery(&mut self, kind: SubqueryKind, q: &sp::Query) -> Result<Expr, SqlError> {
        let query = self.nested(|cx| query_in(cx, q))?;
        Ok(Expr::Subquery(Box::new(Subquery { kind, query, id: 0 })))
    }

    fn special_function(&mut self, name: &str, f: &sp::Function) -> Result<Option<Expr>, SqlError> {
        let Some(func) = AggFunc::of(name) else {
            return Ok(None);
        };
        if func == AggFunc::GroupConcat {
            return self.group_concat(f).map(Some);
        }
        let (args, distinct, star) = call_args(f)?;
        let arg = if star {
            if func != AggFunc::Count || distinct {
                return Err(SqlError::Syntax(format!("{name}(*)")));
            }
            None
        } else {
            match args.as_slice() {
                [a] => Some(expr(self, a)?),
                // COUNT(DISTINCT a, b): the tuples, as one ROW value.
                _ if distinct && func == AggFunc::Count && args.len() > 1 => Some(Expr::Function(
                    DISTINCT_TUPLE.into(),
                    args.iter()
                        .map(|a| expr(self, a))
                        .collect::<Result<_, _>>()?,
                )),
                _ => return Err(SqlError::ParamCount(name.to_string())),
            }
        };
        Ok(Some(Expr::Aggregate(Box::new(Aggregate {
            func,
            arg,
            distinct,
            concat: None,
        }))))
    }
}

impl QueryScope<'_, '_> {
    /// `GROUP_CONCAT([DISTINCT] e, ... [ORDER BY e [ASC|DESC], ...] [SEPARATOR 's'])`: several
    /// expressions are concatenated per row (CONCAT: NULL if one is, and the row is left out).
    fn group_concat(&mut self, f: &sp::Function) -> Result<Expr, SqlError> {
        let sp::FunctionArguments::List(l) = &f.args else {
            return Err(SqlError::Syntax("GROUP_CONCAT".into()));
        };
        let distinct = matches!(
            l.duplicate_treatment,
            Some(sp::DuplicateTreatment::Distinct)
        );
        let mut args = Vec::new();
        for a in &l.args {
            match a {
                sp::FunctionArg::Unnamed(sp::FunctionArgExpr::Expr(e)) => args.push(expr(self, e)?),
                _ => return Err(SqlError::Syntax(format!("GROUP_CONCAT({a})"))),
            }
        }
        let mut spec = ConcatSpec {
            order: Vec::new(),
            separator: ",".into(),
        };
        for c in &l.clauses {
            match c {
                sp::FunctionArgumentClause::OrderBy(obs) => {
                    for o in obs {
                        let desc = matches!(o.options.sort, Some(sp::OrderBySort::Desc));
                        spec.order.push((expr(self, &o.expr)?, desc));
                    }
                }
                sp::FunctionArgumentClause::Separator(v) => {
                    spec.separator = match &v.value {
                        sp::Value::SingleQuotedString(s) | sp::Value::DoubleQuotedString(s) => {
                            s.clone()
                        }
                        other => return Err(SqlError::Syntax(format!("SEPARATOR {other}"))),
                    }
                }
                other => return Err(unsupported(format!("GROUP_CONCAT {other}"))),
            }
        }
        let arg = match args.len() {
            0 => return Err(SqlError::Syntax("GROUP_CONCAT()".into())),
            1 => args.pop(),
            _ => Some(Expr::Function("CONCAT".into(), args)),
        };
        Ok(Expr::Aggregate(Box::new(Aggregate {
            func: AggFunc::GroupConcat,
            arg,
            distinct,
            concat: Some(Box::new(spec)),
        })))
    }
}

/// A FROM clause (of a multi-table UPDATE or DELETE): comma items and their joins.
pub fn from_clause(
    src: &SourceText<'_>,
    params: &mut usize,
    from: &[sp::TableWithJoins],
) -> Result<Vec<TableExpr>, SqlError> {
    let mut cx = QueryScope::new(src, params);
    from.iter().map(|t| table_with_joins(&mut cx, t)).collect()
}

/// An expression with the query engine's names (qualifiers kept, subqueries allowed).
pub fn query_expr(
    src: &SourceText<'_>,
    params: &mut usize,
    e: &sp::Expr,
) -> Result<Expr, SqlError> {
    expr(&mut QueryScope::new(src, params), e)
}

impl<'s, 'a> QueryScope<'s, 'a> {
    fn new(src: &'s SourceText<'a>, params: &'s mut usize) -> Self {
        QueryScope {
            src,
            params,
            ctes: Vec::new(),
            depth: 0,
            into_select: None,
        }
    }
}

/// Translates a query; `params` counts the statement's placeholders.
pub fn query(src: &SourceText<'_>, params: &mut usize, q: &sp::Query) -> Result<Query, SqlError> {
    let mut cx = QueryScope::new(src, params);
    let mut into = Vec::new();
    if let Some((targets, inner)) = union_into(q) {
        // `q1 UNION q2 INTO @x`, as the dialect pass spelled it.
        let mut out = query_in(&mut cx, inner)?;
        out.into = into_vars(targets)?;
        return Ok(out);
    }
    if let sp::SetExpr::Select(s) = &*q.body {
        if let Some(i) = &s.into {
            into = into_vars(i)?;
            cx.into_select = Some(&**s as *const sp::Select);
        }
    }
    let mut out = query_in(&mut cx, q)?;
    out.into = into;
    Ok(out)
}

/// `SELECT * INTO targets FROM (inner) AS shoal_union_into` and nothing else: the set
/// operation with a trailing INTO that [`crate::dialect`] moved out of the way.
fn union_into(q: &sp::Query) -> Option<(&sp::SelectInto, &sp::Query)> {
    let sp::SetExpr::Select(s) = &*q.body else {
        return None;
    };
    let into = s.into.as_ref()?;
    let [sp::SelectItem::Wildcard(_)] = s.projection.as_slice() else {
        return None;
    };
    let [from] = s.from.as_slice() else {
        return None;
    };
    let sp::TableFactor::Derived {
        subquery,
        alias: Some(alias),
        ..
    } = &from.relation
    else {
        return None;
    };
    let plain = from.joins.is_empty()
        && s.selection.is_none()
        && s.having.is_none()
        && q.order_by.is_none()
        && q.limit_clause.is_none()
        && alias.name.value == crate::dialect::UNION_INTO_ALIAS
        && matches!(
            *subquery.body,
            sp::SetExpr::SetOperation { .. } | sp::SetExpr::Query(_)
        );
    plain.then_some((into, &**subquery))
}

/// The user variables of `INTO @a, @b` (names without `@`). A name without `@` would be a
/// stored program's local variable, which shoal has none of (1327, as MariaDB outside one);
/// `INTO OUTFILE` / `DUMPFILE` do not parse.
fn into_vars(i: &sp::SelectInto) -> Result<Vec<String>, SqlError> {
    if i.temporary || i.unlogged || i.table {
        return Err(SqlError::Syntax("INTO".into()));
    }
    i.targets
        .iter()
        .map(|t| match t {
            sp::Expr::Identifier(id) if id.quote_style.is_none() && id.value.starts_with('@') => {
                let name = id.value.trim_start_matches('@');
                if name.is_empty() || name.starts_with('@') {
                    // `@@x`: a system variable is no INTO target.
                    return Err(SqlError::Syntax(id.value.clone()));
                }
                Ok(name.to_string())
            }
            other => Err(SqlError::coded(
                shoal_errors::ER_SP_UNDECLARED_VAR,
                format!("Undeclared variable: {other}"),
            )),
        })
        .collect()
}

/// A query in the scope of its enclosing ones (their CTEs visible); its own `WITH` clause adds
/// CTEs for its body only.
fn query_in(cx: &mut QueryScope<'_, '_>, q: &sp::Query) -> Result<Query, SqlError> {
    let outer_ctes = cx.ctes.len();
    let r = with_clause(cx, q).and_then(|()| query_body(cx, q));
    cx.ctes.truncate(outer_ctes);
    r
}

/// Brings the CTEs of `q`'s WITH clause into scope, each visible to the ones after it.
fn with_clause(cx: &mut QueryScope<'_, '_>, q: &sp::Query) -> Result<(), SqlError> {
    let Some(with) = &q.with else {
        return Ok(());
    };
    let first = cx.ctes.len();
    for cte in &with.cte_tables {
        let name = cte.alias.name.value.clone();
        if cx.ctes[first..].iter().any(|c| c.name == name) {
            return Err(SqlError::coded(
                shoal_errors::ER_DUP_QUERY_NAME,
                format!("Duplicate query name `{name}` in WITH clause"),
            ));
        }
        if cte.from.is_some() {
            return Err(unsupported("WITH ... FROM"));
        }
        let columns: Vec<String> = cte
            .alias
            .columns
            .iter()
            .map(|c| c.name.value.clone())
            .collect();
        let def = if with.recursive {
            recursive_cte(cx, &name, columns, &cte.query)?
        } else {
            CteDef::Plain {
                query: cx.nested(|cx| query_in(cx, &cte.query))?,
                columns,
            }
        };
        cx.ctes.push(Cte { name, def });
    }
    Ok(())
}

/// A CTE of `WITH RECURSIVE`: recursive if one of its members reads it, else plain.
fn recursive_cte(
    cx: &mut QueryScope<'_, '_>,
    name: &str,
    columns: Vec<String>,
    q: &sp::Query,
) -> Result<CteDef, SqlError> {
    let params = *cx.params;
    cx.ctes.push(Cte {
        name: name.to_string(),
        def: CteDef::Own {
            depth: cx.depth + 1,
            refs: 0,
        },
    });
    let r = cx.nested(|cx| recursive_members(cx, name, q));
    cx.ctes.pop();
    match r? {
        Some((anchor, steps, distinct)) => Ok(CteDef::Recursive(RecursiveCte {
            name: name.to_string(),
            columns,
            anchor,
            steps,
            distinct,
        })),
        None => {
            // It never reads itself: an ordinary CTE (translated again, `?`s renumbered).
            *cx.params = params;
            Ok(CteDef::Plain {
                query: cx.nested(|cx| query_in(cx, q))?,
                columns,
            })
        }
    }
}

/// The members of a recursive CTE's query split into (anchor, steps, distinct); `None` when
/// no member reads the CTE.
#[allow(clippy::type_complexity)]
fn recursive_members(
    cx: &mut QueryScope<'_, '_>,
    name: &str,
    q: &sp::Query,
) -> Result<Option<(QueryBody, Vec<QueryBody>, bool)>, SqlError> {
    let outer_ctes = cx.ctes.len();
    let r = (|| {
        with_clause(cx, q)?;
        let mut members = Vec::new();
        flatten_unions(&q.body, None, &mut members)?;
        let mut anchor: Option<QueryBody> = None;
        let mut steps = Vec::new();
        let mut distinct = false;
        for (op, member) in members {
            let before = cx.own_refs();
            let b = body(cx, member)?;
            match cx.own_refs() - before {
                0 => {
                    anchor = Some(match (anchor, op) {
                        (None, _) => b,
                        (Some(left), op) => {
                            let (op, all) = op.unwrap_or((SetOp::Union, true));
                            QueryBody::SetOp {
                                op,
                                all,
                                left: Box::new(left),
                                right: Box::new(b),
                            }
                        }
                    })
                }
                1 => {
                    match op {
                        Some((SetOp::Union, all)) => distinct |= !all,
                        // The first member: no anchor before it (4005 below if none after).
                        None => {}
                        Some(_) => return Err(restriction_violated(name)),
                    }
                    steps.push(b);
                }
                _ => {
                    return Err(unsupported(
                        "several references to a recursive CTE in one SELECT",
                    ))
                }
            }
        }
        if steps.is_empty() {
            return Ok(None);
        }
        if q.order_by.is_some() || q.limit_clause.is_some() {
            return Err(unsupported("global ORDER BY/LIMIT in recursive CTE spec"));
        }
        let anchor = anchor.ok_or_else(|| {
            SqlError::coded(
                shoal_errors::ER_RECURSIVE_WITHOUT_ANCHORS,
                format!("No anchors for recursive WITH element '{name}'"),
            )
        })?;
        Ok(Some((anchor, steps, distinct)))
    })();
    cx.ctes.truncate(outer_ctes);
    r
}

/// The members of a chain of set operations (`a UNION b UNION ALL c` nests to the left), each
/// with the operation (and ALL) joining it to the members before it.
#[allow(clippy::type_complexity)]
fn flatten_unions<'q>(
    b: &'q sp::SetExpr,
    op: Option<(SetOp, bool)>,
    out: &mut Vec<(Option<(SetOp, bool)>, &'q sp::SetExpr)>,
) -> Result<(), SqlError> {
    match b {
        sp::SetExpr::SetOperation {
            left,
            op: sop,
            set_quantifier,
            right,
        } => {
            let joined = (set_op(*sop)?, set_all(*sop, set_quantifier)?);
            flatten_unions(left, op, out)?;
            out.push((Some(joined), right));
        }
        other => out.push((op, other)),
    }
    Ok(())
}

/// Whether a set operation keeps duplicates (`ALL`).
fn set_all(op: sp::SetOperator, q: &sp::SetQuantifier) -> Result<bool, SqlError> {
    match q {
        sp::SetQuantifier::All => Ok(true),
        sp::SetQuantifier::Distinct | sp::SetQuantifier::None => Ok(false),
        other => Err(unsupported(format!("{op} {other}"))),
    }
}

fn set_op(op: sp::SetOperator) -> Result<SetOp, SqlError> {
    match op {
        sp::SetOperator::Union => Ok(SetOp::Union),
        sp::SetOperator::Intersect => Ok(SetOp::Intersect),
        sp::SetOperator::Except => Ok(SetOp::Except),
        other => Err(unsupported(other.to_string())),
    }
}

/// The body, ORDER BY, LIMIT and locks of a query (its CTEs already in scope).
fn query_body(cx: &mut QueryScope<'_, '_>, q: &sp::Query) -> Result<Query, SqlError> {
    if q.fetch.is_some() || !q.pipe_operators.is_empty() {
        return Err(unsupported("FETCH"));
    }
    let body = body(cx, &q.body)?;
    if q.order_by.is_some() && matches!(&body, QueryBody::Select(s) if s.rollup) {
        // MariaDB's rule (MySQL 8 sorts the rollup rows instead).
        return Err(SqlError::coded(
            shoal_errors::ER_WRONG_USAGE,
            "Incorrect usage of CUBE/ROLLUP and ORDER BY",
        ));
    }
    let mut order_by = Vec::new();
    if let Some(ob) = &q.order_by {
        match &ob.kind {
            sp::OrderByKind::Expressions(v) => {
                for o in v {
                    let desc = matches!(o.options.sort, Some(sp::OrderBySort::Desc));
                    order_by.push((expr(cx, &o.expr)?, desc));
                }
            }
            sp::OrderByKind::All(_) => return Err(unsupported("ORDER BY ALL")),
        }
    }
    let (limit, offset) = match &q.limit_clause {
        None => (None, None),
        Some(sp::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if !limit_by.is_empty() {
                return Err(unsupported("LIMIT BY"));
            }
            let l = limit.as_ref().map(|e| expr(cx, e)).transpose()?;
            let o = offset.as_ref().map(|o| expr(cx, &o.value)).transpose()?;
            (l, o)
        }
        Some(sp::LimitClause::OffsetCommaLimit { offset, limit }) => {
            let o = expr(cx, offset)?;
            (Some(expr(cx, limit)?), Some(o))
        }
    };
    let lock = match q.locks.first() {
        None => RowLock::None,
        Some(l) => match l.lock_type {
            sp::LockType::Update => RowLock::Update,
            sp::LockType::Share => RowLock::Share,
        },
    };
    let lock_wait = lock_wait(&q.locks)?;
    Ok(Query {
        calc_found_rows: first_select(&q.body).is_some_and(|s| {
            s.select_modifiers
                .as_ref()
                .is_some_and(|m| m.sql_calc_found_rows)
        }),
        body,
        order_by,
        limit,
        offset,
        lock,
        lock_wait,
        into: Vec::new(),
    })
}

/// The first SELECT of a query body (the left-most member of a set operation).
fn first_select(b: &sp::SetExpr) -> Option<&sp::Select> {
    match b {
        sp::SetExpr::Select(s) => Some(s),
        sp::SetExpr::Query(q) => first_select(&q.body),
        sp::SetExpr::SetOperation { left, .. } => first_select(left),
        _ => None,
    }
}

/// `NOWAIT` / `SKIP LOCKED` of a locking clause (one per query; `FOR UPDATE OF t` is refused).
pub fn lock_wait(locks: &[sp::LockClause]) -> Result<LockWait, SqlError> {
    let Some(l) = locks.first() else {
        return Ok(LockWait::Wait);
    };
    if locks.len() > 1 || l.of.is_some() {
        return Err(unsupported("FOR UPDATE OF / several locking clauses"));
    }
    Ok(match l.nonblock {
        None => LockWait::Wait,
        Some(sp::NonBlock::Nowait) => LockWait::NoWait,
        Some(sp::NonBlock::SkipLocked) => LockWait::SkipLocked,
    })
}

fn body(cx: &mut QueryScope<'_, '_>, b: &sp::SetExpr) -> Result<QueryBody, SqlError> {
    match b {
        sp::SetExpr::Select(s) => Ok(QueryBody::Select(Box::new(select(cx, s)?))),
        sp::SetExpr::Query(q) => Ok(QueryBody::Query(Box::new(query_in(cx, q)?))),
        sp::SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            let (op, all) = (set_op(*op)?, set_all(*op, set_quantifier)?);
            let left = body(cx, left)?;
            let right = body(cx, right)?;
            Ok(QueryBody::SetOp {
                op,
                all,
                left: Box::new(left),
                right: Box::new(right),
            })
        }
        other => Err(unsupported(other.to_string())),
    }
}

fn select(cx: &mut QueryScope<'_, '_>, sel: &sp::Select) -> Result<QuerySelect, SqlError> {
    if sel.into.is_some() && cx.into_select != Some(sel as *const sp::Select) {
        // INTO in a subquery or a member of a set operation: MariaDB's grammar has no such
        // place for it.
        return Err(SqlError::Syntax("INTO".into()));
    }
    if sel.top.is_some()
        || !sel.lateral_views.is_empty()
        || sel.qualify.is_some()
        || !sel.named_window.is_empty()
        || sel.prewhere.is_some()
        || !sel.cluster_by.is_empty()
        || !sel.distribute_by.is_empty()
        || !sel.sort_by.is_empty()
        || !sel.connect_by.is_empty()
    {
        return Err(unsupported("SELECT clause"));
    }
    let distinct = match &sel.distinct {
        None | Some(sp::Distinct::All) => false,
        Some(sp::Distinct::Distinct) => true,
        Some(sp::Distinct::On(_)) => return Err(unsupported("DISTINCT ON")),
    };
    let mut items = Vec::new();
    for it in &sel.projection {
        items.push(match it {
            sp::SelectItem::Wildcard(_) => QueryItem::Wildcard(None),
            sp::SelectItem::QualifiedWildcard(
                sp::SelectItemQualifiedWildcardKind::ObjectName(n),
                _,
            ) => {
                let t =
                    n.0.last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone())
                        .unwrap_or_default();
                QueryItem::Wildcard(Some(t))
            }
            sp::SelectItem::UnnamedExpr(e) => QueryItem::Expr {
                name: cx.src.column_name(e),
                expr: expr(cx, e)?,
                aliased: false,
            },
            sp::SelectItem::ExprWithAlias { expr: e, alias } => QueryItem::Expr {
                expr: expr(cx, e)?,
                name: alias.value.clone(),
                aliased: true,
            },
            other => return Err(unsupported(other.to_string())),
        });
    }
    let mut from = Vec::new();
    for twj in &sel.from {
        from.push(table_with_joins(cx, twj)?);
    }
    if let [TableExpr::Table {
        db: None,
        name,
        alias: None,
    }] = from.as_slice()
    {
        if name.eq_ignore_ascii_case("dual") {
            from.clear();
        }
    }
    let filter = sel.selection.as_ref().map(|e| expr(cx, e)).transpose()?;
    let (group_by, rollup) = match &sel.group_by {
        sp::GroupByExpr::Expressions(v, mods)
            if mods.is_empty() || matches!(mods.as_slice(), [sp::GroupByWithModifier::Rollup]) =>
        {
            let list = v
                .iter()
                .map(|e| expr(cx, e))
                .collect::<Result<Vec<_>, _>>()?;
            (list, !mods.is_empty())
        }
        sp::GroupByExpr::Expressions(..) => return Err(unsupported("GROUP BY modifiers")),
        sp::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL")),
    };
    let having = sel.having.as_ref().map(|e| expr(cx, e)).transpose()?;
    Ok(QuerySelect {
        distinct,
        items,
        from,
        filter,
        group_by,
        rollup,
        having,
    })
}

fn table_with_joins(
    cx: &mut QueryScope<'_, '_>,
    twj: &sp::TableWithJoins,
) -> Result<TableExpr, SqlError> {
    let mut left = table_factor(cx, &twj.relation)?;
    for j in &twj.joins {
        let right = table_factor(cx, &j.relation)?;
        use sp::JoinOperator as J;
        let (kind, c) = match &j.join_operator {
            J::Join(c) | J::Inner(c) | J::StraightJoin(c) => (JoinKind::Inner, Some(c)),
            J::CrossJoin(c) => (JoinKind::Inner, Some(c)),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c)),
            J::Right(c) | J::RightOuter(c) => (JoinKind::Right, Some(c)),
            other => return Err(unsupported(format!("join {other:?}"))),
        };
        let cond = match c {
            None | Some(sp::JoinConstraint::None) => JoinCond::None,
            Some(sp::JoinConstraint::On(e)) => JoinCond::On(expr(cx, e)?),
            Some(sp::JoinConstraint::Using(cols)) => JoinCond::Using(
                cols.iter()
                    .map(|n| {
                        n.0.last()
                            .and_then(|p| p.as_ident())
                            .map(|i| i.value.clone())
                            .unwrap_or_default()
                    })
                    .collect(),
            ),
            Some(sp::JoinConstraint::Natural) => JoinCond::Natural,
            Some(other) => return Err(unsupported(format!("join constraint {other:?}"))),
        };
        if kind != JoinKind::Inner && cond == JoinCond::None {
            // MySQL requires ON or USING for outer joins.
            return Err(SqlError::Syntax("outer join without ON".into()));
        }
        left = TableExpr::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            cond,
        };
    }
    Ok(left)
}

fn table_factor(cx: &mut QueryScope<'_, '_>, tf: &sp::TableFactor) -> Result<TableExpr, SqlError> {
    match tf {
        sp::TableFactor::Table {
            name,
            alias,
            args: None,
            ..
        } => {
            let parts: Vec<String> = name
                .0
                .iter()
                .map(|p| match p.as_ident() {
                    Some(i) => i.value.clone(),
                    None => p.to_string(),
                })
                .collect();
            let (db, table) = match parts.as_slice() {
                [t] => (None, t.clone()),
                [d, t] => (Some(d.clone()), t.clone()),
                _ => return Err(SqlError::Syntax(name.to_string())),
            };
            let alias = alias.as_ref().map(|a| a.name.value.clone());
            if db.is_none() {
                let depth = cx.depth;
                if let Some(cte) = cx.cte(&table) {
                    let shown = alias.unwrap_or_else(|| table.clone());
                    return match &mut cte.def {
                        CteDef::Plain { query, columns } => Ok(TableExpr::Derived {
                            query: Box::new(query.clone()),
                            alias: shown,
                            columns: columns.clone(),
                        }),
                        CteDef::Recursive(r) => Ok(TableExpr::Recursive {
                            cte: Box::new(r.clone()),
                            alias: shown,
                        }),
                        CteDef::Own { depth: own, refs } => {
                            if *own != depth {
                                return Err(restriction_violated(&table));
                            }
                            *refs += 1;
                            Ok(TableExpr::WorkTable {
                                name: table,
                                alias: shown,
                            })
                        }
                    };
                }
            }
            Ok(TableExpr::Table {
                db,
                name: table,
                alias,
            })
        }
        sp::TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => {
            let Some(alias) = alias else {
                return Err(SqlError::coded(
                    shoal_errors::ER_DERIVED_MUST_HAVE_ALIAS,
                    "Every derived table must have its own alias",
                ));
            };
            if !alias.columns.is_empty() {
                return Err(unsupported("derived table column lists"));
            }
            // Not a level deeper for a recursive CTE: a step may read its work table through
            // a derived table (unlike through a subquery).
            let query = query_in(cx, subquery)?;
            Ok(TableExpr::Derived {
                query: Box::new(query),
                alias: alias.name.value.clone(),
                columns: Vec::new(),
            })
        }
        sp::TableFactor::NestedJoin {
            table_with_joins: nested,
            alias: None,
        } => table_with_joins(cx, nested),
        other => Err(unsupported(format!("FROM {other}"))),
    }
}
