//! The sysbench 1.0 OLTP workloads, re-implemented from `oltp_common.lua` and friends.
//!
//! A workload is two things: which statements a client prepares when it starts (sysbench
//! prepares every statement of the workload for every table: 2 + 9 × tables statements for
//! `oltp_read_write`), and what one *event* (a transaction, or one query for the single-statement
//! workloads) executes. `Workload::event` appends the operations of one event to a buffer, in
//! sysbench's order and with sysbench's random choices (one random table per statement group,
//! ids from `sysbench.rand.default`, `c`/`pad` from the digit templates). The executor then runs
//! each [`Op`] either as a server-side prepared statement (`--db-ps-mode=auto`) or as a text
//! query with literal values (`--db-ps-mode=disable`), exactly as sysbench's driver does.
//!
//! `Workload::mix` gives the number of statements of each kind one event issues, which the
//! tests compare with the server's `Com_*` counters.

use crate::rand::{RandSpec, Rng, C_TEMPLATE, PAD_TEMPLATE};
use std::fmt::Write as _;
use std::str::FromStr;

/// The sysbench OLTP workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    OltpReadWrite,
    OltpReadOnly,
    OltpWriteOnly,
    OltpPointSelect,
    OltpUpdateIndex,
    OltpUpdateNonIndex,
    OltpInsert,
    OltpDelete,
    /// TPC-C's order-entry mix (see [`crate::tpcc`]).
    Tpcc,
}

pub const ALL_WORKLOADS: [Workload; 9] = [
    Workload::OltpReadWrite,
    Workload::OltpReadOnly,
    Workload::OltpWriteOnly,
    Workload::OltpPointSelect,
    Workload::OltpUpdateIndex,
    Workload::OltpUpdateNonIndex,
    Workload::OltpInsert,
    Workload::OltpDelete,
    Workload::Tpcc,
];

impl FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim_end_matches(".lua");
        let s = s.rsplit('/').next().unwrap_or(s);
        ALL_WORKLOADS
            .iter()
            .copied()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown workload '{s}' (one of: {})",
                    ALL_WORKLOADS.map(|w| w.name()).join(", ")
                )
            })
    }
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Self::OltpReadWrite => "oltp_read_write",
            Self::OltpReadOnly => "oltp_read_only",
            Self::OltpWriteOnly => "oltp_write_only",
            Self::OltpPointSelect => "oltp_point_select",
            Self::OltpUpdateIndex => "oltp_update_index",
            Self::OltpUpdateNonIndex => "oltp_update_non_index",
            Self::OltpInsert => "oltp_insert",
            Self::OltpDelete => "oltp_delete",
            Self::Tpcc => "tpcc",
        }
    }
}

/// Statement kinds (sysbench's `stmt_defs` plus BEGIN/COMMIT and oltp_insert's text INSERT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StmtKind {
    Begin = 0,
    Commit,
    PointSelect,
    SimpleRange,
    SumRange,
    OrderRange,
    DistinctRange,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
    /// oltp_insert: always a text query with auto-increment id 0.
    InsertText,
    /// tpcc: ROLLBACK (New-Order's 1 % invalid item, and before retrying a transaction).
    Rollback,
    /// tpcc: the SELECTs, UPDATEs, INSERTs and DELETEs of its five transactions.
    TpccSelect,
    TpccUpdate,
    TpccInsert,
    TpccDelete,
}

pub const N_KINDS: usize = 17;

pub const ALL_KINDS: [StmtKind; N_KINDS] = [
    StmtKind::Begin,
    StmtKind::Commit,
    StmtKind::PointSelect,
    StmtKind::SimpleRange,
    StmtKind::SumRange,
    StmtKind::OrderRange,
    StmtKind::DistinctRange,
    StmtKind::IndexUpdate,
    StmtKind::NonIndexUpdate,
    StmtKind::Delete,
    StmtKind::Insert,
    StmtKind::InsertText,
    StmtKind::Rollback,
    StmtKind::TpccSelect,
    StmtKind::TpccUpdate,
    StmtKind::TpccInsert,
    StmtKind::TpccDelete,
];

/// Read / write / other classification, as sysbench's `(r/w/o)` counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Read,
    Write,
    Other,
}

impl StmtKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Begin => "begin",
            Self::Commit => "commit",
            Self::PointSelect => "point_select",
            Self::SimpleRange => "simple_range",
            Self::SumRange => "sum_range",
            Self::OrderRange => "order_range",
            Self::DistinctRange => "distinct_range",
            Self::IndexUpdate => "index_update",
            Self::NonIndexUpdate => "non_index_update",
            Self::Delete => "delete",
            Self::Insert => "insert",
            Self::InsertText => "insert_text",
            Self::Rollback => "rollback",
            Self::TpccSelect => "tpcc_select",
            Self::TpccUpdate => "tpcc_update",
            Self::TpccInsert => "tpcc_insert",
            Self::TpccDelete => "tpcc_delete",
        }
    }

    pub fn class(self) -> Class {
        match self {
            Self::PointSelect
            | Self::SimpleRange
            | Self::SumRange
            | Self::OrderRange
            | Self::DistinctRange
            | Self::TpccSelect => Class::Read,
            Self::IndexUpdate
            | Self::NonIndexUpdate
            | Self::Delete
            | Self::Insert
            | Self::InsertText
            | Self::TpccUpdate
            | Self::TpccInsert
            | Self::TpccDelete => Class::Write,
            Self::Begin | Self::Commit | Self::Rollback => Class::Other,
        }
    }

    /// The statement text with `?` placeholders (for server-side prepare). The tpcc kinds
    /// stand for many statements each (`crate::tpcc::Stmt` has their text).
    pub fn ps_sql(self, table: u32) -> String {
        match self {
            Self::Begin => "BEGIN".into(),
            Self::Commit => "COMMIT".into(),
            Self::Rollback => "ROLLBACK".into(),
            Self::TpccSelect | Self::TpccUpdate | Self::TpccInsert | Self::TpccDelete => {
                String::new()
            }
            Self::PointSelect => format!("SELECT c FROM sbtest{table} WHERE id=?"),
            Self::SimpleRange => format!("SELECT c FROM sbtest{table} WHERE id BETWEEN ? AND ?"),
            Self::SumRange => format!("SELECT SUM(k) FROM sbtest{table} WHERE id BETWEEN ? AND ?"),
            Self::OrderRange => {
                format!("SELECT c FROM sbtest{table} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Self::DistinctRange => {
                format!("SELECT DISTINCT c FROM sbtest{table} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Self::IndexUpdate => format!("UPDATE sbtest{table} SET k=k+1 WHERE id=?"),
            Self::NonIndexUpdate => format!("UPDATE sbtest{table} SET c=? WHERE id=?"),
            Self::Delete => format!("DELETE FROM sbtest{table} WHERE id=?"),
            Self::Insert | Self::InsertText => {
                format!("INSERT INTO sbtest{table} (id, k, c, pad) VALUES (?, ?, ?, ?)")
            }
        }
    }

    /// True for kinds that are prepared per table.
    pub fn per_table(self) -> bool {
        !matches!(self, Self::Begin | Self::Commit | Self::Rollback)
    }
}

/// A parameter value of one operation.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Int(i64),
    Str(String),
}

/// One statement execution of an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub kind: StmtKind,
    /// Table number, 1-based (ignored for BEGIN/COMMIT).
    pub table: u32,
    pub params: Vec<Param>,
}

impl Op {
    /// The text-protocol form with literal values (`--db-ps-mode=disable`, and oltp_insert).
    pub fn text_sql(&self, out: &mut String) {
        out.clear();
        let t = self.table;
        let p = &self.params;
        let int = |i: usize| match &p[i] {
            Param::Int(v) => *v,
            Param::Str(_) => 0,
        };
        let s = |i: usize| match &p[i] {
            Param::Str(v) => v.as_str(),
            Param::Int(_) => "",
        };
        let _ = match self.kind {
            StmtKind::Begin => write!(out, "BEGIN"),
            StmtKind::Commit => write!(out, "COMMIT"),
            StmtKind::Rollback => write!(out, "ROLLBACK"),
            // tpcc runs its statements itself (crate::tpcc), never as an `Op`.
            StmtKind::TpccSelect
            | StmtKind::TpccUpdate
            | StmtKind::TpccInsert
            | StmtKind::TpccDelete => Ok(()),
            StmtKind::PointSelect => write!(out, "SELECT c FROM sbtest{t} WHERE id={}", int(0)),
            StmtKind::SimpleRange => write!(
                out,
                "SELECT c FROM sbtest{t} WHERE id BETWEEN {} AND {}",
                int(0),
                int(1)
            ),
            StmtKind::SumRange => write!(
                out,
                "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN {} AND {}",
                int(0),
                int(1)
            ),
            StmtKind::OrderRange => write!(
                out,
                "SELECT c FROM sbtest{t} WHERE id BETWEEN {} AND {} ORDER BY c",
                int(0),
                int(1)
            ),
            StmtKind::DistinctRange => write!(
                out,
                "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN {} AND {} ORDER BY c",
                int(0),
                int(1)
            ),
            StmtKind::IndexUpdate => write!(out, "UPDATE sbtest{t} SET k=k+1 WHERE id={}", int(0)),
            StmtKind::NonIndexUpdate => {
                write!(out, "UPDATE sbtest{t} SET c='{}' WHERE id={}", s(0), int(1))
            }
            StmtKind::Delete => write!(out, "DELETE FROM sbtest{t} WHERE id={}", int(0)),
            StmtKind::Insert | StmtKind::InsertText => write!(
                out,
                "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({}, {}, '{}', '{}')",
                int(0),
                int(1),
                s(2),
                s(3)
            ),
        };
    }
}

/// Workload options (sysbench's `oltp_common.lua` options).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkloadOpts {
    pub tables: u32,
    pub table_size: u32,
    pub range_size: u32,
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_selects: bool,
    pub skip_trx: bool,
    pub auto_inc: bool,
    pub create_secondary: bool,
    pub secondary: bool,
    pub mysql_storage_engine: String,
    pub rand: RandSpec,
    /// tpcc: warehouses (`--warehouses`).
    #[serde(default = "one")]
    pub warehouses: u32,
    /// tpcc: rows of `item` and of `stock` per warehouse (`--scale-items`; TPC-C: 100,000).
    #[serde(default = "spec_items")]
    pub scale_items: u32,
    /// tpcc: customers (and initial orders) per district (`--scale-customers`; TPC-C: 3,000).
    #[serde(default = "spec_customers")]
    pub scale_customers: u32,
}

fn one() -> u32 {
    1
}

fn spec_items() -> u32 {
    crate::tpcc::SPEC_ITEMS
}

fn spec_customers() -> u32 {
    crate::tpcc::SPEC_CUSTOMERS
}

impl Default for WorkloadOpts {
    fn default() -> Self {
        Self {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
            auto_inc: true,
            create_secondary: true,
            secondary: false,
            mysql_storage_engine: "innodb".into(),
            rand: RandSpec::default(),
            warehouses: 1,
            scale_items: crate::tpcc::SPEC_ITEMS,
            scale_customers: crate::tpcc::SPEC_CUSTOMERS,
        }
    }
}

/// A workload with its options: what to prepare and what one event runs.
#[derive(Debug, Clone)]
pub struct WorkloadDef {
    pub workload: Workload,
    pub opts: WorkloadOpts,
}

impl WorkloadDef {
    pub fn new(workload: Workload, mut opts: WorkloadOpts) -> Self {
        if workload == Workload::OltpPointSelect {
            // oltp_point_select.lua: sysbench.opt.point_selects = 1
            opts.point_selects = 1;
        }
        opts.tables = opts.tables.max(1);
        Self { workload, opts }
    }

    fn trx(&self) -> bool {
        !self.opts.skip_trx
            && matches!(
                self.workload,
                Workload::OltpReadWrite | Workload::OltpReadOnly | Workload::OltpWriteOnly
            )
    }

    /// Statement kinds prepared per connection, in sysbench's order.
    pub fn prepared_kinds(&self) -> Vec<StmtKind> {
        use StmtKind::*;
        let ranges = if self.opts.range_selects {
            vec![SimpleRange, SumRange, OrderRange, DistinctRange]
        } else {
            vec![]
        };
        let trx = if self.trx() {
            vec![Begin, Commit]
        } else {
            vec![]
        };
        match self.workload {
            Workload::OltpReadWrite => [
                trx,
                vec![PointSelect],
                ranges,
                vec![IndexUpdate, NonIndexUpdate, Delete, Insert],
            ]
            .concat(),
            Workload::OltpReadOnly => [vec![PointSelect], trx, ranges].concat(),
            Workload::OltpWriteOnly => {
                [trx, vec![IndexUpdate, NonIndexUpdate, Delete, Insert]].concat()
            }
            Workload::OltpPointSelect => vec![PointSelect],
            Workload::OltpUpdateIndex => vec![IndexUpdate],
            Workload::OltpUpdateNonIndex => vec![NonIndexUpdate],
            Workload::OltpInsert => vec![],
            Workload::OltpDelete => vec![Delete],
            // tpcc prepares its own statements (crate::tpcc::Stmt).
            Workload::Tpcc => vec![],
        }
    }

    /// Number of server-side statements one connection prepares.
    pub fn prepared_per_connection(&self) -> usize {
        if self.workload == Workload::Tpcc {
            return crate::tpcc::txn::Stmt::ALL.len();
        }
        self.prepared_kinds()
            .iter()
            .map(|k| {
                if k.per_table() {
                    self.opts.tables as usize
                } else {
                    1
                }
            })
            .sum()
    }

    fn id(&self, rng: &mut Rng) -> i64 {
        i64::from(rng.default_dist(1, self.opts.table_size.max(1), &self.opts.rand))
    }

    fn table(&self, rng: &mut Rng) -> u32 {
        rng.uniform(1, self.opts.tables)
    }

    fn push_n(&self, out: &mut Vec<Op>, rng: &mut Rng, kind: StmtKind, n: u32) {
        let t = self.table(rng);
        for _ in 0..n {
            let params = match kind {
                StmtKind::PointSelect | StmtKind::IndexUpdate | StmtKind::Delete => {
                    vec![Param::Int(self.id(rng))]
                }
                StmtKind::SimpleRange
                | StmtKind::SumRange
                | StmtKind::OrderRange
                | StmtKind::DistinctRange => {
                    let id = self.id(rng);
                    vec![
                        Param::Int(id),
                        Param::Int(id + i64::from(self.opts.range_size) - 1),
                    ]
                }
                StmtKind::NonIndexUpdate => {
                    let c = rng.rand_string(C_TEMPLATE);
                    vec![Param::Str(c), Param::Int(self.id(rng))]
                }
                _ => vec![],
            };
            out.push(Op {
                kind,
                table: t,
                params,
            });
        }
    }

    fn push_delete_inserts(&self, out: &mut Vec<Op>, rng: &mut Rng) {
        let t = self.table(rng);
        for _ in 0..self.opts.delete_inserts {
            let id = self.id(rng);
            let k = self.id(rng);
            out.push(Op {
                kind: StmtKind::Delete,
                table: t,
                params: vec![Param::Int(id)],
            });
            out.push(Op {
                kind: StmtKind::Insert,
                table: t,
                params: vec![
                    Param::Int(id),
                    Param::Int(k),
                    Param::Str(rng.rand_string(C_TEMPLATE)),
                    Param::Str(rng.rand_string(PAD_TEMPLATE)),
                ],
            });
        }
    }

    fn push_ctl(out: &mut Vec<Op>, kind: StmtKind) {
        out.push(Op {
            kind,
            table: 0,
            params: vec![],
        });
    }

    /// Appends the operations of one event (sysbench's `event()`) to `out`.
    pub fn event(&self, rng: &mut Rng, out: &mut Vec<Op>) {
        use StmtKind::*;
        out.clear();
        let o = &self.opts;
        let trx = self.trx();
        match self.workload {
            Workload::OltpReadWrite | Workload::OltpReadOnly | Workload::OltpWriteOnly => {
                if trx {
                    Self::push_ctl(out, Begin);
                }
                if self.workload != Workload::OltpWriteOnly {
                    self.push_n(out, rng, PointSelect, o.point_selects);
                    if o.range_selects {
                        self.push_n(out, rng, SimpleRange, o.simple_ranges);
                        self.push_n(out, rng, SumRange, o.sum_ranges);
                        self.push_n(out, rng, OrderRange, o.order_ranges);
                        self.push_n(out, rng, DistinctRange, o.distinct_ranges);
                    }
                }
                if self.workload != Workload::OltpReadOnly {
                    self.push_n(out, rng, IndexUpdate, o.index_updates);
                    self.push_n(out, rng, NonIndexUpdate, o.non_index_updates);
                    self.push_delete_inserts(out, rng);
                }
                if trx {
                    Self::push_ctl(out, Commit);
                }
            }
            Workload::OltpPointSelect => self.push_n(out, rng, PointSelect, 1),
            Workload::OltpUpdateIndex => self.push_n(out, rng, IndexUpdate, o.index_updates),
            Workload::OltpUpdateNonIndex => {
                self.push_n(out, rng, NonIndexUpdate, o.non_index_updates)
            }
            Workload::OltpDelete => self.push_n(out, rng, Delete, 1),
            // tpcc transactions read what they write next; the engine runs them through
            // crate::tpcc::Txn, not as a list of operations.
            Workload::Tpcc => {}
            Workload::OltpInsert => {
                let t = self.table(rng);
                let k = self.id(rng);
                out.push(Op {
                    kind: InsertText,
                    table: t,
                    params: vec![
                        Param::Int(0),
                        Param::Int(k),
                        Param::Str(rng.rand_string(C_TEMPLATE)),
                        Param::Str(rng.rand_string(PAD_TEMPLATE)),
                    ],
                });
            }
        }
    }

    /// Statements of each kind per event (index = `StmtKind as usize`).
    pub fn mix(&self) -> [u64; N_KINDS] {
        let mut rng = Rng::new(1, 1);
        let mut ops = Vec::new();
        self.event(&mut rng, &mut ops);
        let mut m = [0u64; N_KINDS];
        for op in &ops {
            m[op.kind as usize] += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_write_has_sysbench_mix() {
        let d = WorkloadDef::new(
            Workload::OltpReadWrite,
            WorkloadOpts {
                tables: 8,
                ..Default::default()
            },
        );
        let mut rng = Rng::new(5, 5);
        let mut ops = vec![];
        d.event(&mut rng, &mut ops);
        assert_eq!(ops.len(), 20);
        assert_eq!(ops[0].kind, StmtKind::Begin);
        assert_eq!(ops[19].kind, StmtKind::Commit);
        assert_eq!(
            ops.iter()
                .filter(|o| o.kind == StmtKind::PointSelect)
                .count(),
            10
        );
        assert_eq!(d.prepared_per_connection(), 74);
        let m = d.mix();
        assert_eq!(m[StmtKind::Delete as usize], 1);
        assert_eq!(m[StmtKind::Insert as usize], 1);
        // delete and insert use the same id on the same table
        let del = ops.iter().find(|o| o.kind == StmtKind::Delete).unwrap();
        let ins = ops.iter().find(|o| o.kind == StmtKind::Insert).unwrap();
        assert_eq!(del.table, ins.table);
        assert_eq!(del.params[0], ins.params[0]);
    }

    #[test]
    fn text_sql_matches_sysbench_shape() {
        let op = Op {
            kind: StmtKind::SimpleRange,
            table: 3,
            params: vec![Param::Int(10), Param::Int(109)],
        };
        let mut s = String::new();
        op.text_sql(&mut s);
        assert_eq!(s, "SELECT c FROM sbtest3 WHERE id BETWEEN 10 AND 109");
    }

    #[test]
    fn single_statement_workloads() {
        for (w, n) in [
            (Workload::OltpPointSelect, 1),
            (Workload::OltpUpdateIndex, 1),
            (Workload::OltpUpdateNonIndex, 1),
            (Workload::OltpDelete, 1),
            (Workload::OltpInsert, 1),
        ] {
            let d = WorkloadDef::new(w, WorkloadOpts::default());
            assert_eq!(d.mix().iter().sum::<u64>(), n, "{w:?}");
        }
        let ro = WorkloadDef::new(Workload::OltpReadOnly, WorkloadOpts::default());
        assert_eq!(ro.mix().iter().sum::<u64>(), 16);
        let wo = WorkloadDef::new(Workload::OltpWriteOnly, WorkloadOpts::default());
        assert_eq!(wo.mix().iter().sum::<u64>(), 6);
        assert_eq!(
            "oltp_read_write".parse::<Workload>(),
            Ok(Workload::OltpReadWrite)
        );
        assert!("nope".parse::<Workload>().is_err());
    }
}
