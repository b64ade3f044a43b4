//! `tpcc`: TPC-C's order-entry workload (TPC Benchmark C, revision 5.11), as a closed-loop,
//! think-time-free load like the other workloads.
//!
//! * Schema ([`create_table_sql`]): the nine tables with the spec's columns and primary keys,
//!   plus the two secondary indexes every kit adds: `customer (c_w_id, c_d_id, c_last,
//!   c_first)` for the by-last-name lookups and `orders (o_w_id, o_d_id, o_c_id, o_id)` for
//!   Order-Status's last order of a customer.
//! * Population ([`load`]): clause 4.3.3.1 at a configurable scale: `--warehouses`, 10
//!   districts per warehouse, `--scale-customers` customers (and initial orders) per district
//!   (spec: 3,000; the last 30 % of the orders are undelivered and in `new_order`, spec: 900 of
//!   3,000), `--scale-items` items and stock rows per warehouse (spec: 100,000). Loaded with
//!   multi-row INSERTs of at most 512 KiB by `--threads` connections; the secondary indexes are
//!   created after the load.
//! * Transactions ([`txn`]): New-Order, Payment, Order-Status, Delivery and Stock-Level in the
//!   spec's mix (45/43/4/4/4 %), each BEGIN ... COMMIT with the statements of the spec's
//!   profiles (clause 2.4-2.8), `SELECT ... FOR UPDATE` where a row is read and then written.
//! * Consistency ([`check`]): conditions 1-4 of clause 3.3.2.
//!
//! Keying (clause 2.1.6 and 4.3.2.3): NURand(1023) customer ids, NURand(8191) item ids,
//! NURand(255) last-name numbers, with fixed constants C ([`C_LAST_LOAD`], [`C_LAST_RUN`],
//! [`C_ID`], [`C_ITEM`]; the run's C for last names differs from the load's by 66, inside the
//! spec's 65..119 window). With fewer than 1,000 customers per district, the last-name
//! numbers are drawn from `0..customers-1` so that every name drawn exists.

pub mod check;
pub mod load;
pub mod txn;

use crate::rand::Rng;
use crate::workload::WorkloadOpts;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::{SystemTime, UNIX_EPOCH};

/// Items (and stock rows per warehouse) in the spec.
pub const SPEC_ITEMS: u32 = 100_000;
/// Customers (and initial orders) per district in the spec.
pub const SPEC_CUSTOMERS: u32 = 3_000;
/// Districts per warehouse (not scaled: consistency condition 1 and the Delivery transaction
/// depend on it).
pub const DISTRICTS: u32 = 10;

/// NURand's C for last names during the load (clause 2.1.6: chosen once).
pub const C_LAST_LOAD: u32 = 157;
/// NURand's C for last names during the run: C_LAST_RUN - C_LAST_LOAD = 66 (clause 2.1.6.1
/// wants 65..=119, not 96 or 112).
pub const C_LAST_RUN: u32 = 223;
/// NURand's C for customer ids.
pub const C_ID: u32 = 259;
/// NURand's C for item ids.
pub const C_ITEM: u32 = 7911;

/// The nine tables, in creation order.
pub const TABLES: [&str; 9] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "new_order",
    "orders",
    "order_line",
    "item",
    "stock",
];

/// The population size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    pub warehouses: u32,
    pub items: u32,
    /// Customers per district (also the initial orders per district).
    pub customers: u32,
}

impl Scale {
    pub fn from_opts(o: &WorkloadOpts) -> Self {
        Self {
            warehouses: o.warehouses.max(1),
            items: o.scale_items.max(1),
            customers: o.scale_customers.max(1),
        }
    }

    /// Initial undelivered orders per district: the last 900 of 3,000 in the spec (30 %).
    pub fn new_orders(&self) -> u32 {
        (u64::from(self.customers) * 900 / 3000) as u32
    }

    /// Last-name numbers in use: 0..=999 in the spec; fewer when there are fewer customers.
    pub fn last_names(&self) -> u32 {
        self.customers.min(1000)
    }

    /// Checks the values `prepare` accepts.
    pub fn validate(&self) -> Result<(), String> {
        if self.warehouses > 32_767 {
            return Err("--warehouses: at most 32767 (w_id is a SMALLINT)".into());
        }
        if self.items < 15 {
            return Err("--scale-items: at least 15 (a New-Order has up to 15 lines)".into());
        }
        if self.customers < 10 {
            return Err("--scale-customers: at least 10".into());
        }
        Ok(())
    }
}

/// TPC-C's NURand(A, x, y) (clause 2.1.6).
pub fn nurand(rng: &mut Rng, a: u32, x: u32, y: u32, c: u32) -> u32 {
    let span = u64::from(y - x) + 1;
    let v = (u64::from(rng.uniform(0, a) | rng.uniform(x, y)) + u64::from(c)) % span;
    x + v as u32
}

const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The customer last name of number `n` (0..=999, clause 4.3.2.3).
pub fn last_name(n: u32, out: &mut String) {
    out.clear();
    out.push_str(SYLLABLES[(n / 100 % 10) as usize]);
    out.push_str(SYLLABLES[(n / 10 % 10) as usize]);
    out.push_str(SYLLABLES[(n % 10) as usize]);
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// a-string of random length `lo..=hi` (letters and digits: nothing to escape in SQL).
pub fn astring(rng: &mut Rng, lo: u32, hi: u32, out: &mut String) {
    out.clear();
    let n = rng.uniform(lo, hi);
    for _ in 0..n {
        out.push(ALNUM[(rng.next_u64() % ALNUM.len() as u64) as usize] as char);
    }
}

/// n-string of random length `lo..=hi`.
pub fn nstring(rng: &mut Rng, lo: u32, hi: u32, out: &mut String) {
    out.clear();
    let n = rng.uniform(lo, hi);
    for _ in 0..n {
        out.push((b'0' + rng.uniform(0, 9) as u8) as char);
    }
}

/// A zip code: 4 random digits and "11111".
pub fn zip(rng: &mut Rng, out: &mut String) {
    nstring(rng, 4, 4, out);
    out.push_str("11111");
}

/// i_data / s_data: a-string of 26..50, 10 % with "ORIGINAL" at a random position.
pub fn data_with_original(rng: &mut Rng, out: &mut String) {
    astring(rng, 26, 50, out);
    if rng.uniform(1, 10) == 1 {
        let at = rng.uniform(0, out.len() as u32 - 8) as usize;
        out.replace_range(at..at + 8, "ORIGINAL");
    }
}

/// Another warehouse than `home` (uniform), or `home` when there is only one.
pub fn other_warehouse(rng: &mut Rng, home: u32, warehouses: u32) -> u32 {
    if warehouses <= 1 {
        return home;
    }
    let w = rng.uniform(1, warehouses - 1);
    if w >= home {
        w + 1
    } else {
        w
    }
}

/// The current time as a DATETIME literal (UTC), `YYYY-MM-DD HH:MM:SS`.
pub fn now_datetime() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    datetime_of(secs)
}

/// `secs` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn datetime_of(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The CREATE TABLE statements of the nine tables (`engine` as `--mysql-storage-engine`).
pub fn create_table_sql(engine: &str) -> Vec<String> {
    let dists: String = (1..=10)
        .map(|d| format!("  s_dist_{d:02} CHAR(24),\n"))
        .collect();
    let tables = [
        "CREATE TABLE warehouse (
  w_id SMALLINT NOT NULL,
  w_name VARCHAR(10),
  w_street_1 VARCHAR(20),
  w_street_2 VARCHAR(20),
  w_city VARCHAR(20),
  w_state CHAR(2),
  w_zip CHAR(9),
  w_tax DECIMAL(4,4),
  w_ytd DECIMAL(12,2),
  PRIMARY KEY (w_id)
)"
        .to_string(),
        "CREATE TABLE district (
  d_id TINYINT NOT NULL,
  d_w_id SMALLINT NOT NULL,
  d_name VARCHAR(10),
  d_street_1 VARCHAR(20),
  d_street_2 VARCHAR(20),
  d_city VARCHAR(20),
  d_state CHAR(2),
  d_zip CHAR(9),
  d_tax DECIMAL(4,4),
  d_ytd DECIMAL(12,2),
  d_next_o_id INT,
  PRIMARY KEY (d_w_id, d_id)
)"
        .to_string(),
        "CREATE TABLE customer (
  c_id INT NOT NULL,
  c_d_id TINYINT NOT NULL,
  c_w_id SMALLINT NOT NULL,
  c_first VARCHAR(16),
  c_middle CHAR(2),
  c_last VARCHAR(16),
  c_street_1 VARCHAR(20),
  c_street_2 VARCHAR(20),
  c_city VARCHAR(20),
  c_state CHAR(2),
  c_zip CHAR(9),
  c_phone CHAR(16),
  c_since DATETIME,
  c_credit CHAR(2),
  c_credit_lim DECIMAL(12,2),
  c_discount DECIMAL(4,4),
  c_balance DECIMAL(12,2),
  c_ytd_payment DECIMAL(12,2),
  c_payment_cnt SMALLINT,
  c_delivery_cnt SMALLINT,
  c_data VARCHAR(500),
  PRIMARY KEY (c_w_id, c_d_id, c_id)
)"
        .to_string(),
        "CREATE TABLE history (
  h_c_id INT,
  h_c_d_id TINYINT,
  h_c_w_id SMALLINT,
  h_d_id TINYINT,
  h_w_id SMALLINT,
  h_date DATETIME,
  h_amount DECIMAL(6,2),
  h_data VARCHAR(24)
)"
        .to_string(),
        "CREATE TABLE new_order (
  no_o_id INT NOT NULL,
  no_d_id TINYINT NOT NULL,
  no_w_id SMALLINT NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)
)"
        .to_string(),
        "CREATE TABLE orders (
  o_id INT NOT NULL,
  o_d_id TINYINT NOT NULL,
  o_w_id SMALLINT NOT NULL,
  o_c_id INT,
  o_entry_d DATETIME,
  o_carrier_id TINYINT,
  o_ol_cnt TINYINT,
  o_all_local TINYINT,
  PRIMARY KEY (o_w_id, o_d_id, o_id)
)"
        .to_string(),
        "CREATE TABLE order_line (
  ol_o_id INT NOT NULL,
  ol_d_id TINYINT NOT NULL,
  ol_w_id SMALLINT NOT NULL,
  ol_number TINYINT NOT NULL,
  ol_i_id INT,
  ol_supply_w_id SMALLINT,
  ol_delivery_d DATETIME,
  ol_quantity TINYINT,
  ol_amount DECIMAL(6,2),
  ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)
)"
        .to_string(),
        "CREATE TABLE item (
  i_id INT NOT NULL,
  i_im_id INT,
  i_name VARCHAR(24),
  i_price DECIMAL(5,2),
  i_data VARCHAR(50),
  PRIMARY KEY (i_id)
)"
        .to_string(),
        format!(
            "CREATE TABLE stock (
  s_i_id INT NOT NULL,
  s_w_id SMALLINT NOT NULL,
  s_quantity SMALLINT,
{dists}  s_ytd DECIMAL(8,0),
  s_order_cnt SMALLINT,
  s_remote_cnt SMALLINT,
  s_data VARCHAR(50),
  PRIMARY KEY (s_w_id, s_i_id)
)"
        ),
    ];
    tables
        .into_iter()
        .map(|t| format!("{t} /*! ENGINE = {engine} */"))
        .collect()
}

/// The secondary indexes, created after the load.
pub fn index_sql() -> [&'static str; 2] {
    [
        "CREATE INDEX idx_customer ON customer (c_w_id, c_d_id, c_last, c_first)",
        "CREATE INDEX idx_orders ON orders (o_w_id, o_d_id, o_c_id, o_id)",
    ]
}

/// Drops the nine tables.
pub async fn cleanup(conn: &mut Conn, quiet: bool) -> Result<(), mysql_async::Error> {
    for t in TABLES {
        if !quiet {
            println!("Dropping table '{t}'...");
        }
        conn.query_drop(format!("DROP TABLE IF EXISTS {t}")).await?;
    }
    Ok(())
}

/// Reads the population's scale from a loaded database: warehouses (`MAX(w_id)`), items
/// (`MAX(i_id)`) and customers per district (`MAX(c_id)` of district 1 of warehouse 1).
pub async fn detect_scale(conn: &mut Conn) -> Result<Scale, String> {
    async fn max(conn: &mut Conn, sql: &str) -> Result<u32, String> {
        let v: Option<Option<u32>> = conn
            .query_first(sql)
            .await
            .map_err(|e| format!("{sql}: {e} (was `prepare tpcc` run?)"))?;
        match v.flatten() {
            Some(n) if n > 0 => Ok(n),
            _ => Err(format!("{sql}: no rows (was `prepare tpcc` run?)")),
        }
    }
    Ok(Scale {
        warehouses: max(conn, "SELECT MAX(w_id) FROM warehouse").await?,
        items: max(conn, "SELECT MAX(i_id) FROM item").await?,
        customers: max(
            conn,
            "SELECT MAX(c_id) FROM customer WHERE c_w_id = 1 AND c_d_id = 1",
        )
        .await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut r = Rng::new(1, 1);
        let mut hits = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut r, 1023, 1, 3000, C_ID);
            assert!((1..=3000).contains(&v));
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits[1..].iter().min().unwrap();
        // Non-uniform: the most drawn id is drawn several times as often as the least.
        assert!(max > 3 * min.max(1), "max {max} min {min}");
        // Tiny scales work too.
        for _ in 0..1000 {
            let v = nurand(&mut r, 8191, 1, 20, C_ITEM);
            assert!((1..=20).contains(&v));
        }
    }

    #[test]
    fn last_names_follow_the_syllables() {
        let mut s = String::new();
        last_name(0, &mut s);
        assert_eq!(s, "BARBARBAR");
        last_name(371, &mut s);
        assert_eq!(s, "PRICALLYOUGHT");
        last_name(999, &mut s);
        assert_eq!(s, "EINGEINGEING");
    }

    #[test]
    fn strings_and_dates() {
        let mut r = Rng::new(2, 2);
        let mut s = String::new();
        let mut orig = 0;
        for _ in 0..2000 {
            data_with_original(&mut r, &mut s);
            assert!((26..=50).contains(&s.len()), "{s}");
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
            orig += usize::from(s.contains("ORIGINAL"));
        }
        assert!((100..300).contains(&orig), "{orig}");
        zip(&mut r, &mut s);
        assert_eq!(s.len(), 9);
        assert!(s.ends_with("11111"));
        assert_eq!(datetime_of(0), "1970-01-01 00:00:00");
        assert_eq!(datetime_of(951_782_400 + 3661), "2000-02-29 01:01:01");
        assert_eq!(datetime_of(1_798_761_599), "2026-12-31 23:59:59");
        for _ in 0..100 {
            let w = other_warehouse(&mut r, 2, 3);
            assert!(w == 1 || w == 3);
        }
        assert_eq!(other_warehouse(&mut r, 1, 1), 1);
    }

    #[test]
    fn schema_has_the_nine_tables_and_keys() {
        let ddl = create_table_sql("innodb");
        assert_eq!(ddl.len(), 9);
        for (sql, t) in ddl.iter().zip(TABLES) {
            assert!(sql.starts_with(&format!("CREATE TABLE {t} (")), "{sql}");
        }
        assert!(ddl[8].contains("s_dist_10 CHAR(24)"));
        assert!(ddl[2].contains("PRIMARY KEY (c_w_id, c_d_id, c_id)"));
        assert!(!ddl[3].contains("PRIMARY KEY"));
        let s = Scale {
            warehouses: 1,
            items: 100_000,
            customers: 3000,
        };
        assert_eq!(s.new_orders(), 900);
        assert_eq!(s.last_names(), 1000);
        assert!(s.validate().is_ok());
    }
}
