//! Which frame slots a plan reads: the columns worth converting from storage values.
//!
//! A stored row arrives with every column decoded into a `Datum`; turning a `Datum` into a SQL
//! `Value` allocates for every string. sysbench's range queries select `c` out of four
//! columns, and converting the 60-byte `pad` they never read was a measurable part of their
//! cost. So after binding, one walk over the whole plan marks every slot some expression
//! reads — select lists, every filter and join condition, access-path bounds (outer columns of
//! index nested loops), hash-join keys, GROUP BY, aggregates and their GROUP_CONCAT order,
//! HAVING, ORDER BY, LIMIT, derived tables, recursive CTE members, every subquery and the
//! outer slots correlated ones read. A stored leaf then converts only the marked columns and
//! leaves the others NULL.
//!
//! The walk must see every expression the runner evaluates, or a column would read as NULL:
//! it is written against the plan's types field by field (a new field with expressions has to
//! be added here), and the SQL suite, the differential tests against MariaDB and
//! `every_slot_a_plan_reads_is_marked` (which compares with a walk over the plan's `Debug`
//! text) guard it.

use shoal_sql::ast::Expr;

use super::bind::visit_expr;
use super::*;
use crate::plan::{Access, BoundExpr};

/// `true` for every slot of `plan`'s frame that an expression of the plan reads.
pub(crate) fn read_slots(plan: &QueryPlan) -> Vec<bool> {
    let mut m = Marks {
        read: vec![false; plan.slots],
    };
    m.node(&plan.root);
    for sp in &plan.subqueries {
        m.node(&sp.node);
        for &s in &sp.outer {
            m.slot(s);
        }
    }
    m.read
}

struct Marks {
    read: Vec<bool>,
}

impl Marks {
    fn slot(&mut self, s: usize) {
        if let Some(r) = self.read.get_mut(s) {
            *r = true;
        }
    }

    fn expr(&mut self, e: &Expr) {
        visit_expr(e, &mut |x| {
            if let Expr::Slot(s) = x {
                if let Some(r) = self.read.get_mut(*s) {
                    *r = true;
                }
            }
        });
    }

    fn opt(&mut self, e: &Option<Expr>) {
        if let Some(e) = e {
            self.expr(e);
        }
    }

    fn node(&mut self, n: &QNode) {
        for (k, _) in &n.order {
            if let SortKey::Expr(e) = k {
                self.expr(e);
            }
        }
        self.opt(&n.limit);
        self.opt(&n.offset);
        self.body(&n.body);
    }

    fn body(&mut self, b: &Body) {
        match b {
            Body::Select(s) => self.select(s),
            Body::SetOp { left, right, .. } => {
                self.body(left);
                self.body(right);
            }
            Body::Query(q) => self.node(q),
        }
    }

    fn select(&mut self, s: &SelectPlan) {
        s.items.iter().for_each(|e| self.expr(e));
        self.opt(&s.filter);
        s.group_by.iter().for_each(|e| self.expr(e));
        for a in &s.aggs {
            self.opt(&a.arg);
            if let Some(c) = &a.concat {
                c.order.iter().for_each(|(e, _)| self.expr(e));
            }
        }
        self.opt(&s.having);
        self.source(&s.from);
        for leaf in &s.leaves {
            self.opt(&leaf.filter);
            self.access(&leaf.access);
            for (own, other) in &leaf.hash {
                self.expr(own);
                self.expr(other);
            }
            match &leaf.kind {
                LeafKind::Derived(n) => self.node(n),
                LeafKind::Recursive(rp) => {
                    self.body(&rp.anchor);
                    rp.steps.iter().for_each(|b| self.body(b));
                }
                LeafKind::Table { .. }
                | LeafKind::System { .. }
                | LeafKind::Provided { .. }
                | LeafKind::Work(_) => {}
            }
        }
    }

    fn source(&mut self, s: &Source) {
        if let Source::Join {
            left, right, on, ..
        } = s
        {
            self.source(left);
            self.source(right);
            self.opt(on);
        }
    }

    fn access(&mut self, a: &Access) {
        let bound = |m: &mut Self, b: &BoundExpr| match b {
            BoundExpr::Included(e)
            | BoundExpr::Excluded(e)
            | BoundExpr::LikeLo(e, _)
            | BoundExpr::LikeHi(e, _) => m.expr(e),
            BoundExpr::Unbounded => {}
        };
        match a {
            Access::FullScan => {}
            Access::PkPoint(v) => v.iter().for_each(|e| self.expr(e)),
            Access::In { list, .. } => list.iter().for_each(|e| self.expr(e)),
            Access::Range { prefix, lo, hi, .. } => {
                prefix.iter().for_each(|e| self.expr(e));
                bound(self, lo);
                bound(self, hi);
            }
            Access::Union { parts, .. } => parts.iter().for_each(|p| self.access(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::TableStmt;
    use crate::translate::parse_table_statement;
    use crate::{EngineConfig, TableEngine};

    /// Every `Slot(n)` in a plan's `Debug` text is marked read: an independent look at the
    /// plan that needs no list of its fields, over queries that put slots everywhere the walk
    /// goes (select lists, filters, join conditions, index nested loops, hash joins, GROUP BY,
    /// GROUP_CONCAT's ORDER BY, HAVING, ORDER BY, derived tables, recursive CTEs, correlated
    /// subqueries, set operations). And a column nothing reads is not marked.
    #[test]
    fn every_slot_a_plan_reads_is_marked() {
        let dir = std::env::temp_dir().join(format!("shoal-decode-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = EngineConfig::new(dir.join("data"));
        cfg.block_cache_bytes = 8 << 20;
        cfg.direct_reads = false;
        let e = TableEngine::open(cfg).expect("open");
        let store = e.store();
        store.create_database("test").expect("db");
        for ddl in [
            "CREATE TABLE t1 (id INT PRIMARY KEY, a INT, b VARCHAR(10), c VARCHAR(60))",
            "CREATE TABLE t2 (id INT PRIMARY KEY, k INT, v VARCHAR(10), w INT, KEY (k))",
        ] {
            match parse_table_statement(ddl).expect(ddl).0 {
                TableStmt::CreateTable { spec, .. } => {
                    store.create_table("test", spec).expect(ddl);
                }
                other => panic!("{other:?}"),
            }
        }
        let mut ts = e.session();
        let queries = [
            "SELECT a FROM t1 WHERE id = 1",
            "SELECT t1.b, t2.v FROM t1 JOIN t2 ON t2.k = t1.a WHERE t1.id > 3",
            "SELECT t1.b FROM t1 JOIN t2 ON t2.w = t1.a",
            "SELECT a, COUNT(*), GROUP_CONCAT(b ORDER BY c) FROM t1 GROUP BY a HAVING SUM(id) > 1",
            "SELECT b FROM t1 ORDER BY c DESC, a + id LIMIT 2",
            "SELECT x.s FROM (SELECT a + 1 AS s FROM t1 WHERE b = 'x') AS x",
            "WITH RECURSIVE r (n) AS (SELECT a FROM t1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) \
             SELECT n FROM r",
            "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.w = t1.a AND t2.v = t1.b)",
            "SELECT (SELECT MAX(v) FROM t2 WHERE t2.k = t1.id) FROM t1",
            "SELECT b FROM t1 WHERE a IN (SELECT w FROM t2) UNION SELECT v FROM t2 WHERE id < 3",
            "SELECT * FROM t1 LEFT JOIN t2 USING (id) WHERE t2.id IS NULL",
        ];
        for sql in queries {
            let plan = ts.prepare(sql, Some("test")).expect(sql);
            let q = plan.query.as_ref().expect("a query plan");
            let text = format!("{:?} {:?}", q.root, q.subqueries);
            let mut seen = 0;
            for part in text.split("Slot(").skip(1) {
                let n: usize = part
                    .split(')')
                    .next()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or_else(|| panic!("{sql}: Slot({part:.20}"));
                assert!(q.read[n], "{sql}: slot {n} is read but not marked");
                seen += 1;
            }
            assert!(seen > 0, "{sql}: no slot in the plan text");
        }
        // `SELECT a FROM t1 WHERE id = 1` reads id and a, not b or c.
        let plan = ts.prepare(queries[0], Some("test")).expect("prepare");
        let q = plan.query.as_ref().expect("a query plan");
        assert_eq!(q.read, [true, true, false, false]);
        drop(ts);
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
