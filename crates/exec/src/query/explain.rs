//! `EXPLAIN SELECT ...`: the bound plan as MySQL's table — one row per table read, in the order
//! the nested loops read them, with the access path chosen for each.
//!
//! Columns are MySQL's (`id, select_type, table, partitions, type, possible_keys, key, key_len,
//! ref, rows, filtered, Extra`). `type` follows the access path: `const` for a primary-key point
//! read of constants, `eq_ref` for one that depends on an earlier table, `ref` for an equality
//! prefix of a key, `range` for ranges and IN lists, `ALL` for a full scan. shoal keeps no row
//! estimates yet: `rows` and `filtered` are NULL rather than invented numbers.

use shoal_sql::ast::Expr;
use shoal_sql::value::Value;

use super::bind::visit_expr;
use super::*;
use crate::convert::ColumnInfo;
use crate::plan::{Access, KeyName};

/// The result columns of EXPLAIN.
pub fn columns() -> Vec<ColumnInfo> {
    let mut c = vec![ColumnInfo::int("id")];
    for n in [
        "select_type",
        "table",
        "partitions",
        "type",
        "possible_keys",
        "key",
        "key_len",
        "ref",
    ] {
        c.push(ColumnInfo::text(n));
    }
    c.push(ColumnInfo::int("rows"));
    c.push(ColumnInfo::expr(
        "filtered",
        shoal_sql::value::SqlType::Double,
    ));
    c.push(ColumnInfo::text("Extra"));
    c
}

/// EXPLAIN's rows for a plan.
pub fn rows(plan: &QueryPlan) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    let mut next_id = 1;
    let simple = plan.subqueries.is_empty() && !has_union(&plan.root.body);
    node(
        plan,
        &plan.root,
        if simple { "SIMPLE" } else { "PRIMARY" },
        &mut next_id,
        &mut out,
    );
    for sp in &plan.subqueries {
        let kind = if sp.correlated {
            "DEPENDENT SUBQUERY"
        } else {
            "SUBQUERY"
        };
        node(plan, &sp.node, kind, &mut next_id, &mut out);
    }
    out
}

fn has_union(b: &Body) -> bool {
    match b {
        Body::SetOp { .. } => true,
        Body::Query(q) => has_union(&q.body),
        Body::Select(_) => false,
    }
}

fn node(plan: &QueryPlan, n: &QNode, kind: &str, next_id: &mut i64, out: &mut Vec<Vec<Value>>) {
    body(plan, &n.body, kind, next_id, out);
}

fn body(plan: &QueryPlan, b: &Body, kind: &str, next_id: &mut i64, out: &mut Vec<Vec<Value>>) {
    match b {
        Body::Select(s) => select(plan, s, kind, next_id, out),
        Body::Query(q) => node(plan, q, kind, next_id, out),
        Body::SetOp {
            op, left, right, ..
        } => {
            let first = *next_id;
            body(plan, left, kind, next_id, out);
            body(plan, right, op.name(), next_id, out);
            let ids: Vec<String> = (first..*next_id).map(|i| i.to_string()).collect();
            let word = op.name().to_ascii_lowercase();
            out.push(row(
                None,
                &format!("{} RESULT", op.name()),
                &format!("<{word}{}>", ids.join(",")),
                "ALL",
                None,
                None,
                "",
            ));
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    id: Option<i64>,
    kind: &str,
    table: &str,
    ty: &str,
    key: Option<String>,
    reference: Option<String>,
    extra: &str,
) -> Vec<Value> {
    let s = |x: &str| Value::Str(x.to_string());
    let opt = |x: Option<String>| x.map(Value::Str).unwrap_or(Value::Null);
    vec![
        id.map(Value::Int).unwrap_or(Value::Null),
        s(kind),
        s(table),
        Value::Null,
        s(ty),
        opt(key.clone()),
        opt(key),
        Value::Null,
        opt(reference),
        Value::Null,
        Value::Null,
        s(extra),
    ]
}

/// Whether an access path's expressions read a column of an earlier table (a join lookup).
fn depends_on_rows(a: &Access) -> bool {
    let mut dep = false;
    let mut look = |e: &Expr| {
        visit_expr(e, &mut |x| dep |= matches!(x, Expr::Slot(_)));
    };
    match a {
        Access::FullScan => {}
        Access::PkPoint(v) => v.iter().for_each(&mut look),
        Access::In { list, .. } => list.iter().for_each(&mut look),
        Access::Range { prefix, .. } => prefix.iter().for_each(&mut look),
    }
    dep
}

fn select(
    plan: &QueryPlan,
    s: &SelectPlan,
    kind: &str,
    next_id: &mut i64,
    out: &mut Vec<Vec<Value>>,
) {
    let id = *next_id;
    *next_id += 1;
    let mut order = Vec::new();
    order_of(&s.from, &mut order);
    if order.is_empty() {
        out.push(row(Some(id), kind, "", "", None, None, "No tables used"));
    }
    for l in order {
        let leaf = &s.leaves[l];
        // MySQL 8's words for a hash join.
        let extra = match (leaf.filter.is_some(), leaf.hash.is_empty()) {
            (true, false) => "Using where; Using join buffer (hash join)",
            (true, true) => "Using where",
            _ => "",
        };
        let (ty, key, reference) = match &leaf.kind {
            LeafKind::Table { .. } => {
                let key_name = |k: &KeyName| match k {
                    KeyName::Primary => "PRIMARY".to_string(),
                    KeyName::Index(n) => n.clone(),
                };
                let dep = depends_on_rows(&leaf.access);
                let reference = Some(if dep { "func" } else { "const" }.to_string());
                match &leaf.access {
                    Access::FullScan => ("ALL", None, None),
                    Access::PkPoint(_) if dep => ("eq_ref", Some("PRIMARY".into()), reference),
                    Access::PkPoint(_) => ("const", Some("PRIMARY".into()), reference),
                    Access::In { key, .. } => ("range", Some(key_name(key)), None),
                    Access::Range {
                        key,
                        lo,
                        hi,
                        prefix,
                        ..
                    } => {
                        let ranged = lo != &crate::plan::BoundExpr::Unbounded
                            || hi != &crate::plan::BoundExpr::Unbounded;
                        if ranged || prefix.is_empty() {
                            ("range", Some(key_name(key)), None)
                        } else {
                            ("ref", Some(key_name(key)), reference)
                        }
                    }
                }
            }
            LeafKind::Derived(_) | LeafKind::Recursive(_) | LeafKind::Work(_) => {
                ("ALL", None, None)
            }
            LeafKind::System { .. } | LeafKind::Provided { .. } => ("ALL", None, None),
        };
        let table = match &leaf.kind {
            LeafKind::Derived(_) | LeafKind::Recursive(_) => format!("<derived:{}>", leaf.name),
            _ => leaf.name.clone(),
        };
        out.push(row(Some(id), kind, &table, ty, key, reference, extra));
    }
    for leaf in &s.leaves {
        match &leaf.kind {
            LeafKind::Derived(n) => node(plan, n, "DERIVED", next_id, out),
            LeafKind::Recursive(r) => {
                body(plan, &r.anchor, "DERIVED", next_id, out);
                for st in &r.steps {
                    body(plan, st, "RECURSIVE UNION", next_id, out);
                }
            }
            _ => {}
        }
    }
}

fn order_of(s: &Source, out: &mut Vec<usize>) {
    match s {
        Source::OneRow => {}
        Source::Leaf(i) => out.push(*i),
        Source::Join { left, right, .. } => {
            order_of(left, out);
            order_of(right, out);
        }
    }
}
