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
        let query = query(self.src, self.params, q)?;
        Ok(Expr::Subquery(Box::new(Subquery { kind, query, id: 0 })))
    }

    fn special_function(&mut self, name: &str, f: &sp::Function) -> Result<Option<Expr>, SqlError> {
        let Some(func) = AggFunc::of(name) else {
            return Ok(None);
        };
        let (args, distinct, star) = call_args(f)?;
        let arg = if star {
            if func != AggFunc::Count || distinct {
                return Err(SqlError::Syntax(format!("{name}(*)")));
            }
            None
        } else {
            match args.as_slice() {
                [a] => Some(expr(self, a)?),
                // COUNT(DISTINCT a, b) and the like.
                _ if distinct && func == AggFunc::Count => {
                    return Err(unsupported("COUNT(DISTINCT) of several expressions"))
                }
                _ => return Err(SqlError::ParamCount(name.to_string())),
            }
        };
        Ok(Some(Expr::Aggregate(Box::new(Aggregate {
            func,
            arg,
            distinct,
        }))))
    }
}

/// A FROM clause (of a multi-table UPDATE or DELETE): comma items and their joins.
pub fn from_clause(
    src: &SourceText<'_>,
    params: &mut usize,
    from: &[sp::TableWithJoins],
) -> Result<Vec<TableExpr>, SqlError> {
    let mut cx = QueryScope { src, params };
    from.iter().map(|t| table_with_joins(&mut cx, t)).collect()
}

/// An expression with the query engine's names (qualifiers kept, subqueries allowed).
pub fn query_expr(
    src: &SourceText<'_>,
    params: &mut usize,
    e: &sp::Expr,
) -> Result<Expr, SqlError> {
    expr(&mut QueryScope { src, params }, e)
}

/// Translates a query; `params` counts the statement's placeholders.
pub fn query(src: &SourceText<'_>, params: &mut usize, q: &sp::Query) -> Result<Query, SqlError> {
    if q.with.is_some() {
        return Err(unsupported("WITH (common table expressions)"));
    }
    if q.fetch.is_some() || !q.pipe_operators.is_empty() {
        return Err(unsupported("FETCH"));
    }
    let mut cx = QueryScope { src, params };
    let body = body(&mut cx, &q.body)?;
    let mut order_by = Vec::new();
    if let Some(ob) = &q.order_by {
        match &ob.kind {
            sp::OrderByKind::Expressions(v) => {
                for o in v {
                    let desc = matches!(o.options.sort, Some(sp::OrderBySort::Desc));
                    order_by.push((expr(&mut cx, &o.expr)?, desc));
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
            let l = limit.as_ref().map(|e| expr(&mut cx, e)).transpose()?;
            let o = offset
                .as_ref()
                .map(|o| expr(&mut cx, &o.value))
                .transpose()?;
            (l, o)
        }
        Some(sp::LimitClause::OffsetCommaLimit { offset, limit }) => {
            let o = expr(&mut cx, offset)?;
            (Some(expr(&mut cx, limit)?), Some(o))
        }
    };
    let lock = match q.locks.first() {
        None => RowLock::None,
        Some(l) => match l.lock_type {
            sp::LockType::Update => RowLock::Update,
            sp::LockType::Share => RowLock::Share,
        },
    };
    Ok(Query {
        body,
        order_by,
        limit,
        offset,
        lock,
    })
}

fn body(cx: &mut QueryScope<'_, '_>, b: &sp::SetExpr) -> Result<QueryBody, SqlError> {
    match b {
        sp::SetExpr::Select(s) => Ok(QueryBody::Select(Box::new(select(cx, s)?))),
        sp::SetExpr::Query(q) => Ok(QueryBody::Query(Box::new(query(cx.src, cx.params, q)?))),
        sp::SetExpr::SetOperation {
            left,
            op,
            set_quantifier,
            right,
        } => {
            if *op != sp::SetOperator::Union {
                return Err(unsupported(format!("{op}")));
            }
            let all = match set_quantifier {
                sp::SetQuantifier::All => true,
                sp::SetQuantifier::Distinct | sp::SetQuantifier::None => false,
                other => return Err(unsupported(format!("UNION {other}"))),
            };
            let left = body(cx, left)?;
            let right = body(cx, right)?;
            Ok(QueryBody::Union {
                all,
                left: Box::new(left),
                right: Box::new(right),
            })
        }
        other => Err(unsupported(other.to_string())),
    }
}

fn select(cx: &mut QueryScope<'_, '_>, sel: &sp::Select) -> Result<QuerySelect, SqlError> {
    if sel.into.is_some() {
        return Err(unsupported("SELECT ... INTO"));
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
    let group_by = match &sel.group_by {
        sp::GroupByExpr::Expressions(v, mods) if mods.is_empty() => {
            v.iter()
                .map(|e| expr(cx, e))
                .collect::<Result<Vec<_>, _>>()?
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
            Ok(TableExpr::Table {
                db,
                name: table,
                alias: alias.as_ref().map(|a| a.name.value.clone()),
            })
        }
        sp::TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => {
            let Some(alias) = alias else {
                return Err(SqlError::other(
                    1248,
                    "42000",
                    "Every derived table must have its own alias",
                ));
            };
            if !alias.columns.is_empty() {
                return Err(unsupported("derived table column lists"));
            }
            let query = query(cx.src, cx.params, subquery)?;
            Ok(TableExpr::Derived {
                query: Box::new(query),
                alias: alias.name.value.clone(),
            })
        }
        sp::TableFactor::NestedJoin {
            table_with_joins: nested,
            alias: None,
        } => table_with_joins(cx, nested),
        other => Err(unsupported(format!("FROM {other}"))),
    }
}
