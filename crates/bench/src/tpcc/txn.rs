//! The five TPC-C transactions: their inputs (clause 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1) and
//! the statements each one issues (the profiles of clause 2.4.2, 2.5.2, 2.6.2, 2.7.4, 2.8.2).
//!
//! A transaction's inputs are drawn once ([`draw`]); [`execute`] runs them as BEGIN ...
//! COMMIT. When a statement fails with an error the engine retries (`--mysql-ignore-errors`:
//! deadlock 1213, lock wait timeout 1205), the engine sends ROLLBACK (a lock wait timeout
//! rolls back only the statement, so the transaction must be ended before it is run again)
//! and runs the same inputs again.
//!
//! | transaction | statements |
//! |---|---|
//! | New-Order | warehouse ⋈ customer by key; district `FOR UPDATE`; district `d_next_o_id + 1`; INSERT orders, new_order; per line: item by key (none: ROLLBACK, the 1 % invalid item), stock `FOR UPDATE`, UPDATE stock, INSERT order_line |
//! | Payment | UPDATE warehouse `w_ytd`; its address; UPDATE district `d_ytd`; its address; customers by last name `ORDER BY c_first` (60 %: the middle one) or by id; customer `FOR UPDATE`; (bad credit: its `c_data`) UPDATE customer; INSERT history |
//! | Order-Status | customer by last name or id; its last order (`ORDER BY o_id DESC LIMIT 1` on the orders index); the order's lines |
//! | Delivery | per district: oldest new_order `ORDER BY no_o_id LIMIT 1 FOR UPDATE`; DELETE it; the order `FOR UPDATE`; UPDATE `o_carrier_id`; UPDATE order lines' `ol_delivery_d`; `SUM(ol_amount)`; UPDATE customer balance and delivery count |
//! | Stock-Level | district's `d_next_o_id`; `COUNT(DISTINCT s_i_id)` of the last 20 orders' items with stock below the threshold (order_line ⋈ stock) |

use super::{nurand, other_warehouse, Scale, C_ID, C_ITEM, C_LAST_RUN, DISTRICTS};
use crate::client::{Client, ExecError};
use crate::rand::Rng;
use crate::workload::StmtKind;
use mysql_async::Value;

/// The transaction types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    NewOrder = 0,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

pub const KINDS: [Kind; 5] = [
    Kind::NewOrder,
    Kind::Payment,
    Kind::OrderStatus,
    Kind::Delivery,
    Kind::StockLevel,
];

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::NewOrder => "new_order",
            Self::Payment => "payment",
            Self::OrderStatus => "order_status",
            Self::Delivery => "delivery",
            Self::StockLevel => "stock_level",
        }
    }

    /// The mix (clause 5.2.3): New-Order 45 %, Payment 43 %, the other three 4 % each.
    pub fn draw(rng: &mut Rng) -> Self {
        match rng.uniform(1, 100) {
            1..=45 => Self::NewOrder,
            46..=88 => Self::Payment,
            89..=92 => Self::OrderStatus,
            93..=96 => Self::Delivery,
            _ => Self::StockLevel,
        }
    }
}

/// The statements the transactions issue (prepared once per connection in
/// `--db-ps-mode=auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stmt {
    Begin = 0,
    Commit,
    Rollback,
    NoCustomerWarehouse,
    NoDistrict,
    NoDistrictNext,
    NoOrderInsert,
    NoNewOrderInsert,
    NoItem,
    NoStockUpdate,
    NoLineInsert,
    PayWarehouseYtd,
    PayWarehouse,
    PayDistrictYtd,
    PayDistrict,
    CustomersByLast,
    PayCustomer,
    PayCustomerData,
    PayCustomerBadCredit,
    PayCustomerGoodCredit,
    PayHistory,
    OsCustomer,
    OsLastOrder,
    OsLines,
    DelOldestNewOrder,
    DelNewOrderDelete,
    DelOrder,
    DelOrderCarrier,
    DelLinesDate,
    DelLinesSum,
    DelCustomer,
    SlDistrict,
    SlCount,
    /// New-Order's stock row with `s_dist_01`; `s_dist_02`..`s_dist_10` follow.
    NoStock01,
    NoStock02,
    NoStock03,
    NoStock04,
    NoStock05,
    NoStock06,
    NoStock07,
    NoStock08,
    NoStock09,
    NoStock10,
}

impl Stmt {
    pub const ALL: [Stmt; 43] = [
        Stmt::Begin,
        Stmt::Commit,
        Stmt::Rollback,
        Stmt::NoCustomerWarehouse,
        Stmt::NoDistrict,
        Stmt::NoDistrictNext,
        Stmt::NoOrderInsert,
        Stmt::NoNewOrderInsert,
        Stmt::NoItem,
        Stmt::NoStockUpdate,
        Stmt::NoLineInsert,
        Stmt::PayWarehouseYtd,
        Stmt::PayWarehouse,
        Stmt::PayDistrictYtd,
        Stmt::PayDistrict,
        Stmt::CustomersByLast,
        Stmt::PayCustomer,
        Stmt::PayCustomerData,
        Stmt::PayCustomerBadCredit,
        Stmt::PayCustomerGoodCredit,
        Stmt::PayHistory,
        Stmt::OsCustomer,
        Stmt::OsLastOrder,
        Stmt::OsLines,
        Stmt::DelOldestNewOrder,
        Stmt::DelNewOrderDelete,
        Stmt::DelOrder,
        Stmt::DelOrderCarrier,
        Stmt::DelLinesDate,
        Stmt::DelLinesSum,
        Stmt::DelCustomer,
        Stmt::SlDistrict,
        Stmt::SlCount,
        Stmt::NoStock01,
        Stmt::NoStock02,
        Stmt::NoStock03,
        Stmt::NoStock04,
        Stmt::NoStock05,
        Stmt::NoStock06,
        Stmt::NoStock07,
        Stmt::NoStock08,
        Stmt::NoStock09,
        Stmt::NoStock10,
    ];

    /// New-Order's stock statement for district `d` (1..=10).
    pub fn no_stock(d: u32) -> Stmt {
        Self::ALL[Stmt::NoStock01 as usize + (d as usize - 1).min(9)]
    }

    /// The statement text with `?` placeholders.
    pub fn sql(self) -> String {
        use Stmt::*;
        let s = match self {
            Begin => "BEGIN",
            Commit => "COMMIT",
            Rollback => "ROLLBACK",
            // warehouse first: a server that joins in FROM order (shoal) then looks the
            // customer up by its whole primary key; `customer, warehouse` makes it scan every
            // customer for the one that matches (see docs/BENCH.md).
            NoCustomerWarehouse => {
                "SELECT c_discount, c_last, c_credit, w_tax FROM warehouse, customer \
                 WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?"
            }
            NoDistrict => {
                "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE"
            }
            NoDistrictNext => {
                "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?"
            }
            NoOrderInsert => {
                "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, \
                 o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)"
            }
            NoNewOrderInsert => "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)",
            NoItem => "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?",
            NoStockUpdate => {
                "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, \
                 s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?"
            }
            NoLineInsert => {
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
                 ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
                 VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)"
            }
            PayWarehouseYtd => "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?",
            PayWarehouse => {
                "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse \
                 WHERE w_id = ?"
            }
            PayDistrictYtd => "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?",
            PayDistrict => {
                "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district \
                 WHERE d_w_id = ? AND d_id = ?"
            }
            CustomersByLast => {
                "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? \
                 ORDER BY c_first"
            }
            PayCustomer => {
                "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, \
                 c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance \
                 FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE"
            }
            PayCustomerData => {
                "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
            }
            PayCustomerBadCredit => {
                "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, \
                 c_payment_cnt = c_payment_cnt + 1, c_data = ? \
                 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
            }
            PayCustomerGoodCredit => {
                "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, \
                 c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
            }
            PayHistory => {
                "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, \
                 h_amount, h_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            }
            OsCustomer => {
                "SELECT c_balance, c_first, c_middle, c_last FROM customer \
                 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
            }
            OsLastOrder => {
                "SELECT o_id, o_entry_d, o_carrier_id FROM orders \
                 WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1"
            }
            OsLines => {
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                 FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
            }
            DelOldestNewOrder => {
                "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? \
                 ORDER BY no_o_id LIMIT 1 FOR UPDATE"
            }
            DelNewOrderDelete => {
                "DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"
            }
            DelOrder => {
                "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ? FOR UPDATE"
            }
            DelOrderCarrier => {
                "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?"
            }
            DelLinesDate => {
                "UPDATE order_line SET ol_delivery_d = ? \
                 WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
            }
            DelLinesSum => {
                "SELECT SUM(ol_amount) FROM order_line \
                 WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?"
            }
            DelCustomer => {
                "UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 \
                 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
            }
            SlDistrict => "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?",
            SlCount => {
                "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock \
                 WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? \
                 AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?"
            }
            NoStock01 | NoStock02 | NoStock03 | NoStock04 | NoStock05 | NoStock06 | NoStock07
            | NoStock08 | NoStock09 | NoStock10 => {
                let d = self as usize - NoStock01 as usize + 1;
                return format!(
                    "SELECT s_quantity, s_data, s_dist_{d:02} FROM stock \
                     WHERE s_w_id = ? AND s_i_id = ? FOR UPDATE"
                );
            }
        };
        s.to_string()
    }

    /// What the statement counts as (statements by kind; read/write/other).
    pub fn kind(self) -> StmtKind {
        use Stmt::*;
        match self {
            Begin => StmtKind::Begin,
            Commit => StmtKind::Commit,
            Rollback => StmtKind::Rollback,
            NoDistrictNext
            | NoStockUpdate
            | PayWarehouseYtd
            | PayDistrictYtd
            | PayCustomerBadCredit
            | PayCustomerGoodCredit
            | DelOrderCarrier
            | DelLinesDate
            | DelCustomer => StmtKind::TpccUpdate,
            NoOrderInsert | NoNewOrderInsert | NoLineInsert | PayHistory => StmtKind::TpccInsert,
            DelNewOrderDelete => StmtKind::TpccDelete,
            _ => StmtKind::TpccSelect,
        }
    }
}

/// Where statement executions are counted (the engine's shared counters).
pub trait Tally: Sync {
    /// A statement is about to be sent.
    fn sent(&self, k: StmtKind);
    /// It succeeded.
    fn done(&self, k: StmtKind);
}

/// A terminal's fixed inputs (clause 2.3.2 / 2.8.1.1): its home warehouse, and the district
/// its Stock-Level transactions look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    pub w: u32,
    pub d: u32,
}

impl Terminal {
    /// Client `id`'s terminal: warehouses round-robin, then districts.
    pub fn new(id: usize, warehouses: u32) -> Self {
        let w = warehouses.max(1) as usize;
        Self {
            w: (id % w) as u32 + 1,
            d: ((id / w) % DISTRICTS as usize) as u32 + 1,
        }
    }
}

/// How a customer is selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Customer {
    Id(u32),
    /// By last name (the middle one of those with that name, ordered by first name).
    Last(String),
}

/// One order line of a New-Order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    pub item: u32,
    pub supply_w: u32,
    pub qty: u32,
}

/// A transaction with its inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Txn {
    NewOrder {
        w: u32,
        d: u32,
        c: u32,
        /// The last line's item is `items + 1` (unused) in 1 % of the transactions.
        lines: Vec<Line>,
    },
    Payment {
        w: u32,
        d: u32,
        c_w: u32,
        c_d: u32,
        c: Customer,
        cents: u32,
    },
    OrderStatus {
        w: u32,
        d: u32,
        c: Customer,
    },
    Delivery {
        w: u32,
        carrier: u32,
    },
    StockLevel {
        w: u32,
        d: u32,
        threshold: u32,
    },
}

impl Txn {
    pub fn kind(&self) -> Kind {
        match self {
            Self::NewOrder { .. } => Kind::NewOrder,
            Self::Payment { .. } => Kind::Payment,
            Self::OrderStatus { .. } => Kind::OrderStatus,
            Self::Delivery { .. } => Kind::Delivery,
            Self::StockLevel { .. } => Kind::StockLevel,
        }
    }
}

fn customer(rng: &mut Rng, s: &Scale) -> Customer {
    // 60 % by last name (clause 2.5.1.2, 2.6.1.2).
    if rng.uniform(1, 100) <= 60 {
        let n = nurand(rng, 255, 0, s.last_names() - 1, C_LAST_RUN);
        let mut name = String::new();
        super::last_name(n, &mut name);
        Customer::Last(name)
    } else {
        Customer::Id(nurand(rng, 1023, 1, s.customers, C_ID))
    }
}

/// Draws a transaction of the mix with its inputs for terminal `t`.
pub fn draw(rng: &mut Rng, s: &Scale, t: Terminal) -> Txn {
    let k = Kind::draw(rng);
    draw_kind(rng, s, t, k)
}

/// Draws the inputs of a transaction of type `k` for terminal `t`.
pub fn draw_kind(rng: &mut Rng, s: &Scale, t: Terminal, k: Kind) -> Txn {
    let w = t.w;
    match k {
        Kind::NewOrder => {
            let d = rng.uniform(1, DISTRICTS);
            let c = nurand(rng, 1023, 1, s.customers, C_ID);
            let n = rng.uniform(5, 15);
            let rollback = rng.uniform(1, 100) == 1;
            let lines = (1..=n)
                .map(|i| Line {
                    item: if rollback && i == n {
                        s.items + 1
                    } else {
                        nurand(rng, 8191, 1, s.items, C_ITEM)
                    },
                    // 1 % of the lines from a remote warehouse (clause 2.4.1.5).
                    supply_w: if s.warehouses > 1 && rng.uniform(1, 100) == 1 {
                        other_warehouse(rng, w, s.warehouses)
                    } else {
                        w
                    },
                    qty: rng.uniform(1, 10),
                })
                .collect();
            Txn::NewOrder { w, d, c, lines }
        }
        Kind::Payment => {
            let d = rng.uniform(1, DISTRICTS);
            // 85 % home, 15 % a remote warehouse's customer (clause 2.5.1.2).
            let (c_w, c_d) = if s.warehouses > 1 && rng.uniform(1, 100) > 85 {
                (
                    other_warehouse(rng, w, s.warehouses),
                    rng.uniform(1, DISTRICTS),
                )
            } else {
                (w, d)
            };
            let c = customer(rng, s);
            Txn::Payment {
                w,
                d,
                c_w,
                c_d,
                c,
                cents: rng.uniform(100, 500_000),
            }
        }
        Kind::OrderStatus => {
            let d = rng.uniform(1, DISTRICTS);
            Txn::OrderStatus {
                w,
                d,
                c: customer(rng, s),
            }
        }
        Kind::Delivery => Txn::Delivery {
            w,
            carrier: rng.uniform(1, 10),
        },
        Kind::StockLevel => Txn::StockLevel {
            w,
            d: t.d,
            threshold: rng.uniform(10, 20),
        },
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// New-Order with an unused item id: rolled back, as the spec requires.
    RolledBack,
}

fn int(v: u32) -> Value {
    Value::Int(i64::from(v))
}

fn text(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

/// Cents as a decimal literal (`-12.34`).
pub fn cents_str(c: i64) -> String {
    let sign = if c < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", c.abs() / 100, c.abs() % 100)
}

/// A decimal value (text or binary protocol) in cents, rounded.
pub fn to_cents(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(i * 100),
        Value::UInt(u) => Some(*u as i64 * 100),
        Value::Double(d) => Some((d * 100.0).round() as i64),
        Value::Float(f) => Some((f64::from(*f) * 100.0).round() as i64),
        Value::Bytes(b) => parse_cents(std::str::from_utf8(b).ok()?),
        _ => None,
    }
}

/// `"123.4"`, `"-0.05"`, `"7"`, `"1.5e3"` in cents (exact for up to 2 decimals, else rounded).
pub fn parse_cents(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.contains(['e', 'E']) {
        return s.parse::<f64>().ok().map(|f| (f * 100.0).round() as i64);
    }
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let fb = frac.as_bytes();
    let digit = |i: usize| -> Option<i64> {
        fb.get(i).map_or(Some(0), |b| {
            b.is_ascii_digit().then_some(i64::from(b - b'0'))
        })
    };
    v = v * 100 + digit(0)? * 10 + digit(1)?;
    if digit(2)? >= 5 {
        v += 1;
    }
    Some(if neg { -v } else { v })
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        Value::Double(d) => Some(*d as i64),
        _ => None,
    }
}

fn as_string(v: &Value) -> String {
    match v {
        Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Value::NULL => String::new(),
        other => other.as_sql(true).trim_matches('\'').to_string(),
    }
}

/// Runs the statements of one transaction and counts them.
struct Run<'a> {
    client: &'a mut Client,
    ignore: &'a [u16],
    tally: &'a dyn Tally,
    kind: Kind,
}

impl Run<'_> {
    async fn q(&mut self, s: Stmt, params: Vec<Value>) -> Result<Vec<Vec<Value>>, ExecError> {
        let k = s.kind();
        self.tally.sent(k);
        let rows = self.client.exec_own(s, params, self.ignore).await?;
        self.tally.done(k);
        Ok(rows)
    }

    /// Runs a statement that changes rows; returns how many.
    async fn change(&mut self, s: Stmt, params: Vec<Value>) -> Result<u64, ExecError> {
        self.q(s, params).await?;
        Ok(self.client.conn.affected_rows())
    }

    /// The first row of a SELECT that must return one.
    async fn one(&mut self, s: Stmt, params: Vec<Value>) -> Result<Vec<Value>, ExecError> {
        let mut rows = self.q(s, params).await?;
        if rows.is_empty() {
            return Err(self.fail(format!("{s:?} returned no row")));
        }
        Ok(rows.swap_remove(0))
    }

    fn fail(&self, msg: String) -> ExecError {
        ExecError::Client(format!("tpcc {}: {msg}", self.kind.name()))
    }

    fn int(&self, row: &[Value], i: usize, what: &str) -> Result<i64, ExecError> {
        row.get(i)
            .and_then(as_i64)
            .ok_or_else(|| self.fail(format!("{what} is not an integer: {:?}", row.get(i))))
    }

    fn cents(&self, row: &[Value], i: usize, what: &str) -> Result<i64, ExecError> {
        row.get(i)
            .and_then(to_cents)
            .ok_or_else(|| self.fail(format!("{what} is not a number: {:?}", row.get(i))))
    }

    /// The customer id: given, or the middle one (rounded up) of those with the last name.
    async fn customer_id(&mut self, w: u32, d: u32, c: &Customer) -> Result<u32, ExecError> {
        match c {
            Customer::Id(id) => Ok(*id),
            Customer::Last(name) => {
                let rows = self
                    .q(Stmt::CustomersByLast, vec![int(w), int(d), text(name)])
                    .await?;
                if rows.is_empty() {
                    return Err(self.fail(format!(
                        "no customer named {name} in warehouse {w} district {d}"
                    )));
                }
                let row = &rows[(rows.len() - 1) / 2];
                Ok(self.int(row, 0, "c_id")? as u32)
            }
        }
    }

    async fn new_order(
        &mut self,
        w: u32,
        d: u32,
        c: u32,
        lines: &[Line],
    ) -> Result<Outcome, ExecError> {
        let now = super::now_datetime();
        self.q(Stmt::Begin, vec![]).await?;
        let cw = self
            .one(Stmt::NoCustomerWarehouse, vec![int(w), int(d), int(c)])
            .await?;
        let _discount = self.cents(&cw, 0, "c_discount")?;
        let dist = self.one(Stmt::NoDistrict, vec![int(w), int(d)]).await?;
        let o_id = self.int(&dist, 0, "d_next_o_id")?;
        self.change(Stmt::NoDistrictNext, vec![int(w), int(d)])
            .await?;
        let all_local = lines.iter().all(|l| l.supply_w == w);
        self.change(
            Stmt::NoOrderInsert,
            vec![
                Value::Int(o_id),
                int(d),
                int(w),
                int(c),
                text(&now),
                int(lines.len() as u32),
                int(u32::from(all_local)),
            ],
        )
        .await?;
        self.change(
            Stmt::NoNewOrderInsert,
            vec![Value::Int(o_id), int(d), int(w)],
        )
        .await?;
        for (n, l) in lines.iter().enumerate() {
            let item = self.q(Stmt::NoItem, vec![int(l.item)]).await?;
            let Some(item) = item.first() else {
                // The 1 % with an unused item id: "Item number is not valid", rolled back.
                self.q(Stmt::Rollback, vec![]).await?;
                return Ok(Outcome::RolledBack);
            };
            let price = self.cents(item, 0, "i_price")?;
            let stock = self
                .one(Stmt::no_stock(d), vec![int(l.supply_w), int(l.item)])
                .await?;
            let s_qty = self.int(&stock, 0, "s_quantity")?;
            let dist_info = stock.get(2).map(as_string).unwrap_or_default();
            let qty = i64::from(l.qty);
            let new_qty = if s_qty >= qty + 10 {
                s_qty - qty
            } else {
                s_qty - qty + 91
            };
            self.change(
                Stmt::NoStockUpdate,
                vec![
                    Value::Int(new_qty),
                    int(l.qty),
                    int(u32::from(l.supply_w != w)),
                    int(l.supply_w),
                    int(l.item),
                ],
            )
            .await?;
            self.change(
                Stmt::NoLineInsert,
                vec![
                    Value::Int(o_id),
                    int(d),
                    int(w),
                    int(n as u32 + 1),
                    int(l.item),
                    int(l.supply_w),
                    int(l.qty),
                    text(&cents_str(price * qty)),
                    text(&dist_info),
                ],
            )
            .await?;
        }
        self.q(Stmt::Commit, vec![]).await?;
        Ok(Outcome::Committed)
    }

    #[allow(clippy::too_many_arguments)]
    async fn payment(
        &mut self,
        w: u32,
        d: u32,
        c_w: u32,
        c_d: u32,
        c: &Customer,
        cents: u32,
    ) -> Result<Outcome, ExecError> {
        let now = super::now_datetime();
        let amount = cents_str(i64::from(cents));
        self.q(Stmt::Begin, vec![]).await?;
        self.change(Stmt::PayWarehouseYtd, vec![text(&amount), int(w)])
            .await?;
        let wh = self.one(Stmt::PayWarehouse, vec![int(w)]).await?;
        self.change(Stmt::PayDistrictYtd, vec![text(&amount), int(w), int(d)])
            .await?;
        let dist = self.one(Stmt::PayDistrict, vec![int(w), int(d)]).await?;
        let c_id = self.customer_id(c_w, c_d, c).await?;
        let cust = self
            .one(Stmt::PayCustomer, vec![int(c_w), int(c_d), int(c_id)])
            .await?;
        let credit = cust.get(10).map(as_string).unwrap_or_default();
        if credit == "BC" {
            let data = self
                .one(Stmt::PayCustomerData, vec![int(c_w), int(c_d), int(c_id)])
                .await?;
            let mut new = format!(
                "{c_id} {c_d} {c_w} {d} {w} {amount} | {}",
                data.first().map(as_string).unwrap_or_default()
            );
            new.truncate(500);
            self.change(
                Stmt::PayCustomerBadCredit,
                vec![
                    text(&amount),
                    text(&amount),
                    text(&new),
                    int(c_w),
                    int(c_d),
                    int(c_id),
                ],
            )
            .await?;
        } else {
            self.change(
                Stmt::PayCustomerGoodCredit,
                vec![text(&amount), text(&amount), int(c_w), int(c_d), int(c_id)],
            )
            .await?;
        }
        let mut h_data = wh.first().map(as_string).unwrap_or_default();
        h_data.push_str("    ");
        h_data.push_str(&dist.first().map(as_string).unwrap_or_default());
        h_data.truncate(24);
        self.change(
            Stmt::PayHistory,
            vec![
                int(c_id),
                int(c_d),
                int(c_w),
                int(d),
                int(w),
                text(&now),
                text(&amount),
                text(&h_data),
            ],
        )
        .await?;
        self.q(Stmt::Commit, vec![]).await?;
        Ok(Outcome::Committed)
    }

    async fn order_status(&mut self, w: u32, d: u32, c: &Customer) -> Result<Outcome, ExecError> {
        self.q(Stmt::Begin, vec![]).await?;
        let c_id = self.customer_id(w, d, c).await?;
        self.one(Stmt::OsCustomer, vec![int(w), int(d), int(c_id)])
            .await?;
        let order = self
            .q(Stmt::OsLastOrder, vec![int(w), int(d), int(c_id)])
            .await?;
        if let Some(o) = order.first() {
            let o_id = self.int(o, 0, "o_id")?;
            self.q(Stmt::OsLines, vec![int(w), int(d), Value::Int(o_id)])
                .await?;
        }
        self.q(Stmt::Commit, vec![]).await?;
        Ok(Outcome::Committed)
    }

    async fn delivery(&mut self, w: u32, carrier: u32) -> Result<Outcome, ExecError> {
        let now = super::now_datetime();
        self.q(Stmt::Begin, vec![]).await?;
        for d in 1..=DISTRICTS {
            let no = self
                .q(Stmt::DelOldestNewOrder, vec![int(w), int(d)])
                .await?;
            // No undelivered order in this district: skipped (clause 2.7.4.2).
            let Some(no) = no.first() else { continue };
            let o_id = Value::Int(self.int(no, 0, "no_o_id")?);
            let deleted = self
                .change(Stmt::DelNewOrderDelete, vec![int(w), int(d), o_id.clone()])
                .await?;
            if deleted != 1 {
                return Err(self.fail(format!(
                    "DELETE of new_order ({w}, {d}, {}) changed {deleted} rows after it was read FOR UPDATE",
                    o_id.as_sql(false)
                )));
            }
            let order = self
                .one(Stmt::DelOrder, vec![int(w), int(d), o_id.clone()])
                .await?;
            let c_id = self.int(&order, 0, "o_c_id")?;
            self.change(
                Stmt::DelOrderCarrier,
                vec![int(carrier), int(w), int(d), o_id.clone()],
            )
            .await?;
            self.change(
                Stmt::DelLinesDate,
                vec![text(&now), int(w), int(d), o_id.clone()],
            )
            .await?;
            let sum = self
                .one(Stmt::DelLinesSum, vec![int(w), int(d), o_id])
                .await?;
            let total = match sum.first() {
                None | Some(Value::NULL) => 0,
                Some(_) => self.cents(&sum, 0, "SUM(ol_amount)")?,
            };
            self.change(
                Stmt::DelCustomer,
                vec![text(&cents_str(total)), int(w), int(d), Value::Int(c_id)],
            )
            .await?;
        }
        self.q(Stmt::Commit, vec![]).await?;
        Ok(Outcome::Committed)
    }

    async fn stock_level(&mut self, w: u32, d: u32, threshold: u32) -> Result<Outcome, ExecError> {
        self.q(Stmt::Begin, vec![]).await?;
        let dist = self.one(Stmt::SlDistrict, vec![int(w), int(d)]).await?;
        let next = self.int(&dist, 0, "d_next_o_id")?;
        self.one(
            Stmt::SlCount,
            vec![
                int(w),
                int(d),
                Value::Int(next),
                Value::Int(next - 20),
                int(w),
                int(threshold),
            ],
        )
        .await?;
        self.q(Stmt::Commit, vec![]).await?;
        Ok(Outcome::Committed)
    }
}

/// Runs transaction `t` on `client` (BEGIN ... COMMIT, or ROLLBACK for New-Order's invalid
/// item). On an error the transaction may be left open: the caller rolls it back.
pub async fn execute(
    client: &mut Client,
    t: &Txn,
    ignore: &[u16],
    tally: &dyn Tally,
) -> Result<Outcome, ExecError> {
    let mut r = Run {
        client,
        ignore,
        tally,
        kind: t.kind(),
    };
    match t {
        Txn::NewOrder { w, d, c, lines } => r.new_order(*w, *d, *c, lines).await,
        Txn::Payment {
            w,
            d,
            c_w,
            c_d,
            c,
            cents,
        } => r.payment(*w, *d, *c_w, *c_d, c, *cents).await,
        Txn::OrderStatus { w, d, c } => r.order_status(*w, *d, c).await,
        Txn::Delivery { w, carrier } => r.delivery(*w, *carrier).await,
        Txn::StockLevel { w, d, threshold } => r.stock_level(*w, *d, *threshold).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_table_is_consistent() {
        for (i, s) in Stmt::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i, "{s:?}");
            let sql = s.sql();
            assert!(!sql.is_empty());
            let k = s.kind();
            let first = sql.split_whitespace().next().unwrap();
            match k {
                StmtKind::TpccSelect => assert_eq!(first, "SELECT", "{s:?}"),
                StmtKind::TpccUpdate => assert_eq!(first, "UPDATE", "{s:?}"),
                StmtKind::TpccInsert => assert_eq!(first, "INSERT", "{s:?}"),
                StmtKind::TpccDelete => assert_eq!(first, "DELETE", "{s:?}"),
                _ => assert_eq!(first, k.ps_sql(0), "{s:?}"),
            }
        }
        assert_eq!(Stmt::no_stock(1), Stmt::NoStock01);
        assert_eq!(Stmt::no_stock(10), Stmt::NoStock10);
        assert!(Stmt::no_stock(7).sql().contains("s_dist_07"));
        // The reads that precede a write of the same row lock it.
        for s in [
            Stmt::NoDistrict,
            Stmt::PayCustomer,
            Stmt::DelOldestNewOrder,
            Stmt::DelOrder,
            Stmt::NoStock05,
        ] {
            assert!(s.sql().ends_with("FOR UPDATE"), "{s:?}");
        }
    }

    #[test]
    fn mix_and_keying_follow_the_spec() {
        let s = Scale {
            warehouses: 4,
            items: 100_000,
            customers: 3000,
        };
        let t = Terminal::new(5, 4);
        assert_eq!(t, Terminal { w: 2, d: 2 });
        let mut rng = Rng::new(11, 3);
        let n = 100_000;
        let mut kinds = [0u32; 5];
        let (mut by_name, mut cust, mut rollbacks, mut new_orders) = (0, 0, 0, 0);
        let (mut lines, mut remote_lines, mut payments, mut remote_pay) = (0, 0, 0, 0);
        for _ in 0..n {
            let txn = draw(&mut rng, &s, t);
            kinds[txn.kind() as usize] += 1;
            match &txn {
                Txn::NewOrder { w, lines: ls, .. } => {
                    assert_eq!(*w, 2);
                    assert!((5..=15).contains(&ls.len()));
                    new_orders += 1;
                    if ls.last().unwrap().item == s.items + 1 {
                        rollbacks += 1;
                    }
                    for l in ls {
                        lines += 1;
                        remote_lines += u32::from(l.supply_w != 2);
                        assert!((1..=10).contains(&l.qty));
                    }
                }
                Txn::Payment { c_w, c, .. } => {
                    payments += 1;
                    remote_pay += u32::from(*c_w != 2);
                    cust += 1;
                    by_name += u32::from(matches!(c, Customer::Last(_)));
                }
                Txn::OrderStatus { c, .. } => {
                    cust += 1;
                    by_name += u32::from(matches!(c, Customer::Last(_)));
                }
                Txn::StockLevel { d, threshold, .. } => {
                    assert_eq!(*d, 2);
                    assert!((10..=20).contains(threshold));
                }
                Txn::Delivery { carrier, .. } => assert!((1..=10).contains(carrier)),
            }
        }
        let pct = |x: u32, of: u32| 100.0 * f64::from(x) / f64::from(of);
        for (k, want) in kinds.iter().zip([45.0, 43.0, 4.0, 4.0, 4.0]) {
            assert!((pct(*k, n) - want).abs() < 0.6, "{kinds:?}");
        }
        assert!((pct(by_name, cust) - 60.0).abs() < 1.5);
        assert!((pct(rollbacks, new_orders) - 1.0).abs() < 0.3);
        assert!((pct(remote_lines, lines) - 1.0).abs() < 0.2);
        assert!((pct(remote_pay, payments) - 15.0).abs() < 1.0);
        // One warehouse: everything is home.
        let one = Scale { warehouses: 1, ..s };
        for _ in 0..1000 {
            if let Txn::Payment { c_w, .. } = draw_kind(&mut rng, &one, t, Kind::Payment) {
                assert_eq!(c_w, 2);
            }
        }
    }

    #[test]
    fn cents_round_trip() {
        assert_eq!(parse_cents("300000.00"), Some(30_000_000));
        assert_eq!(parse_cents("-10.00"), Some(-1000));
        assert_eq!(parse_cents("-0.05"), Some(-5));
        assert_eq!(parse_cents("12.3"), Some(1230));
        assert_eq!(parse_cents("7"), Some(700));
        assert_eq!(parse_cents("1.005"), Some(101));
        assert_eq!(parse_cents("3.0E5"), Some(30_000_000));
        assert_eq!(parse_cents("x"), None);
        assert_eq!(cents_str(-5), "-0.05");
        assert_eq!(cents_str(123_456), "1234.56");
        assert_eq!(to_cents(&Value::Bytes(b"0.1234".to_vec())), Some(12));
        assert_eq!(to_cents(&Value::Int(3)), Some(300));
    }
}
