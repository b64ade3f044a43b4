//! `prepare tpcc`: creates the nine tables and loads the initial population of clause 4.3.3.1
//! (at the configured scale) with multi-row INSERTs of at most 512 KiB, from `--threads`
//! connections that take load jobs from a shared queue (item and stock in chunks, one job per
//! warehouse for warehouse + districts, one per district for customer + history and for
//! orders + new_order + order_line). The two secondary indexes are created at the end.

use super::{
    astring, data_with_original, last_name, nstring, nurand, zip, Scale, C_LAST_LOAD, DISTRICTS,
};
use crate::rand::Rng;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The bulk INSERT size (sysbench's `BULK_PACKET_SIZE`).
const BULK_BYTES: usize = 512 * 1024;
/// Items (and stock rows) per load job.
const ITEM_CHUNK: u32 = 20_000;

/// One unit of loading work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// `item` rows `from..=to`.
    Items { from: u32, to: u32 },
    /// `stock` rows `from..=to` of warehouse `w`.
    Stock { w: u32, from: u32, to: u32 },
    /// The warehouse row and its districts.
    Warehouse { w: u32 },
    /// Customers and their history rows of one district.
    Customers { w: u32, d: u32 },
    /// Orders, new orders and order lines of one district.
    Orders { w: u32, d: u32 },
}

/// The load jobs, biggest first.
pub fn jobs(s: &Scale) -> Vec<Job> {
    let mut v = Vec::new();
    let chunks = |n: u32| {
        (0..n.div_ceil(ITEM_CHUNK))
            .map(move |i| (i * ITEM_CHUNK + 1, ((i + 1) * ITEM_CHUNK).min(n)))
    };
    for w in 1..=s.warehouses {
        for (from, to) in chunks(s.items) {
            v.push(Job::Stock { w, from, to });
        }
    }
    for (from, to) in chunks(s.items) {
        v.push(Job::Items { from, to });
    }
    for w in 1..=s.warehouses {
        for d in 1..=DISTRICTS {
            v.push(Job::Orders { w, d });
            v.push(Job::Customers { w, d });
        }
        v.push(Job::Warehouse { w });
    }
    v
}

/// Appends rows to multi-row INSERTs and sends each when it reaches [`BULK_BYTES`].
struct Bulk<'a> {
    conn: &'a mut Conn,
    head: String,
    q: String,
    rows: u64,
}

impl<'a> Bulk<'a> {
    fn new(conn: &'a mut Conn, head: &str) -> Self {
        Self {
            conn,
            head: head.to_string(),
            q: String::with_capacity(BULK_BYTES + 4096),
            rows: 0,
        }
    }

    /// Starts the next row: the caller writes `(...)` into the returned buffer.
    fn row(&mut self) -> &mut String {
        if self.q.is_empty() {
            self.q.push_str(&self.head);
        } else {
            self.q.push(',');
        }
        self.rows += 1;
        &mut self.q
    }

    async fn maybe_flush(&mut self) -> Result<(), mysql_async::Error> {
        if self.q.len() >= BULK_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), mysql_async::Error> {
        if !self.q.is_empty() {
            self.conn.query_drop(self.q.as_str()).await?;
            self.q.clear();
        }
        Ok(())
    }
}

/// Cents as `D.CC` (`v` >= 0).
fn money(v: u32) -> String {
    format!("{}.{:02}", v / 100, v % 100)
}

/// A rate with 4 decimals (`v` in 0..=10000 ten-thousandths).
fn rate(v: u32) -> String {
    format!("0.{v:04}")
}

/// Runs one job; returns the rows it inserted.
pub async fn run_job(
    conn: &mut Conn,
    job: Job,
    s: &Scale,
    seed: u64,
    now: &str,
) -> Result<u64, mysql_async::Error> {
    let stream = match job {
        Job::Items { from, .. } => 1 << 40 | u64::from(from),
        Job::Stock { w, from, .. } => 2 << 40 | u64::from(w) << 20 | u64::from(from),
        Job::Warehouse { w } => 3 << 40 | u64::from(w),
        Job::Customers { w, d } => 4 << 40 | u64::from(w) << 8 | u64::from(d),
        Job::Orders { w, d } => 5 << 40 | u64::from(w) << 8 | u64::from(d),
    };
    let mut rng = Rng::new(seed, stream);
    let (mut a, mut b, mut c, mut e) = (String::new(), String::new(), String::new(), String::new());
    let mut rows = 0;
    match job {
        Job::Items { from, to } => {
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) VALUES ",
            );
            for i in from..=to {
                astring(&mut rng, 14, 24, &mut a);
                data_with_original(&mut rng, &mut b);
                let (im, price) = (rng.uniform(1, 10_000), rng.uniform(100, 10_000));
                let _ = write!(bulk.row(), "({i},{im},'{a}',{},'{b}')", money(price));
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
        }
        Job::Stock { w, from, to } => {
            let mut head = "INSERT INTO stock (s_i_id, s_w_id, s_quantity, ".to_string();
            for d in 1..=10 {
                let _ = write!(head, "s_dist_{d:02}, ");
            }
            head.push_str("s_ytd, s_order_cnt, s_remote_cnt, s_data) VALUES ");
            let mut bulk = Bulk::new(conn, &head);
            for i in from..=to {
                let q = rng.uniform(10, 100);
                let r = bulk.row();
                let _ = write!(r, "({i},{w},{q}");
                for _ in 0..10 {
                    astring(&mut rng, 24, 24, &mut a);
                    let _ = write!(r, ",'{a}'");
                }
                data_with_original(&mut rng, &mut b);
                let _ = write!(bulk.row_tail(), ",0,0,0,'{b}')");
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
        }
        Job::Warehouse { w } => {
            astring(&mut rng, 6, 10, &mut a);
            address(&mut rng, &mut b);
            let tax = rate(rng.uniform(0, 2000));
            conn.query_drop(format!(
                "INSERT INTO warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, \
                 w_zip, w_tax, w_ytd) VALUES ({w},'{a}',{b},{tax},300000.00)"
            ))
            .await?;
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, \
                 d_state, d_zip, d_tax, d_ytd, d_next_o_id) VALUES ",
            );
            for d in 1..=DISTRICTS {
                astring(&mut rng, 6, 10, &mut a);
                address(&mut rng, &mut b);
                let tax = rate(rng.uniform(0, 2000));
                let _ = write!(
                    bulk.row(),
                    "({d},{w},'{a}',{b},{tax},30000.00,{})",
                    s.customers + 1
                );
            }
            bulk.flush().await?;
            rows += 1 + bulk.rows;
        }
        Job::Customers { w, d } => {
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, \
                 c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, \
                 c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
                 c_delivery_cnt, c_data) VALUES ",
            );
            let names = s.last_names();
            for cid in 1..=s.customers {
                let n = if cid <= names {
                    cid - 1
                } else {
                    nurand(&mut rng, 255, 0, names - 1, C_LAST_LOAD)
                };
                last_name(n, &mut a);
                astring(&mut rng, 8, 16, &mut b);
                address(&mut rng, &mut c);
                nstring(&mut rng, 16, 16, &mut e);
                let credit = if rng.uniform(1, 10) == 1 { "BC" } else { "GC" };
                let discount = rate(rng.uniform(0, 5000));
                let r = bulk.row();
                let _ = write!(
                    r,
                    "({cid},{d},{w},'{b}','OE','{a}',{c},'{e}','{now}','{credit}',50000.00,\
                     {discount},-10.00,10.00,1,0,'"
                );
                astring(&mut rng, 300, 500, &mut a);
                let _ = write!(bulk.row_tail(), "{a}')");
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, \
                 h_amount, h_data) VALUES ",
            );
            for cid in 1..=s.customers {
                astring(&mut rng, 12, 24, &mut a);
                let _ = write!(bulk.row(), "({cid},{d},{w},{d},{w},'{now}',10.00,'{a}')");
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
        }
        Job::Orders { w, d } => {
            // o_c_id: a random permutation of the customer ids.
            let mut perm: Vec<u32> = (1..=s.customers).collect();
            for i in (1..perm.len()).rev() {
                let j = rng.uniform(0, i as u32) as usize;
                perm.swap(i, j);
            }
            let delivered = s.customers - s.new_orders();
            let mut counts = Vec::with_capacity(perm.len());
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, \
                 o_ol_cnt, o_all_local) VALUES ",
            );
            for (o, cid) in (1..=s.customers).zip(&perm) {
                let carrier = if o <= delivered {
                    rng.uniform(1, 10).to_string()
                } else {
                    "NULL".to_string()
                };
                let cnt = rng.uniform(5, 15);
                counts.push(cnt);
                let _ = write!(bulk.row(), "({o},{d},{w},{cid},'{now}',{carrier},{cnt},1)");
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ",
            );
            for o in delivered + 1..=s.customers {
                let _ = write!(bulk.row(), "({o},{d},{w})");
                bulk.maybe_flush().await?;
            }
            bulk.flush().await?;
            rows += bulk.rows;
            let mut bulk = Bulk::new(
                conn,
                "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, \
                 ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ",
            );
            for (o, cnt) in (1..=s.customers).zip(&counts) {
                for n in 1..=*cnt {
                    let item = rng.uniform(1, s.items);
                    astring(&mut rng, 24, 24, &mut a);
                    let (date, amount) = if o <= delivered {
                        (format!("'{now}'"), "0.00".to_string())
                    } else {
                        ("NULL".to_string(), money(rng.uniform(1, 999_999)))
                    };
                    let _ = write!(
                        bulk.row(),
                        "({o},{d},{w},{n},{item},{w},{date},5,{amount},'{a}')"
                    );
                    bulk.maybe_flush().await?;
                }
            }
            bulk.flush().await?;
            rows += bulk.rows;
        }
    }
    Ok(rows)
}

impl Bulk<'_> {
    /// The buffer of the row being written (after [`Bulk::row`]).
    fn row_tail(&mut self) -> &mut String {
        &mut self.q
    }
}

/// street_1, street_2, city, state, zip as SQL literals separated by commas.
fn address(rng: &mut Rng, out: &mut String) {
    let mut s = String::new();
    out.clear();
    for (lo, hi) in [(10, 20), (10, 20), (10, 20)] {
        astring(rng, lo, hi, &mut s);
        let _ = write!(out, "'{s}',");
    }
    astring(rng, 2, 2, &mut s);
    let _ = write!(out, "'{s}',");
    zip(rng, &mut s);
    let _ = write!(out, "'{s}'");
}

/// Creates the tables, loads them with `threads` connections and creates the indexes.
pub async fn load(
    conns: Vec<Conn>,
    first: &mut Conn,
    engine: &str,
    s: &Scale,
    seed: u64,
    quiet: bool,
) -> Result<(), mysql_async::Error> {
    let t0 = Instant::now();
    for sql in super::create_table_sql(engine) {
        if !quiet {
            let name = sql.split_whitespace().nth(2).unwrap_or("");
            println!("Creating table '{name}'...");
        }
        first.query_drop(sql).await?;
    }
    if !quiet {
        println!(
            "Loading {} warehouse(s): {} items, {} customers and orders per district, {} districts per warehouse, with {} connection(s)...",
            s.warehouses,
            s.items,
            s.customers,
            DISTRICTS,
            conns.len()
        );
    }
    let queue = Arc::new(Mutex::new(jobs(s).into_iter().collect::<VecDeque<_>>()));
    let now = super::now_datetime();
    let mut hs = Vec::new();
    for mut conn in conns {
        let queue = queue.clone();
        let s = *s;
        let now = now.clone();
        hs.push(tokio::spawn(async move {
            let mut rows = 0;
            loop {
                let job = queue.lock().expect("queue").pop_front();
                let Some(job) = job else { break };
                rows += run_job(&mut conn, job, &s, seed, &now).await?;
            }
            let _ = conn.disconnect().await;
            Ok::<u64, mysql_async::Error>(rows)
        }));
    }
    let mut res = Ok(0);
    for h in hs {
        let r = h.await.expect("load task");
        match (&mut res, r) {
            (Ok(total), Ok(n)) => *total += n,
            (Ok(_), Err(e)) => res = Err(e),
            _ => {}
        }
    }
    let rows = res?;
    for sql in super::index_sql() {
        if !quiet {
            println!("{sql}...");
        }
        first.query_drop(sql).await?;
    }
    if !quiet {
        println!("Loaded {rows} rows in {:.1}s", t0.elapsed().as_secs_f64());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_cover_everything_once() {
        let s = Scale {
            warehouses: 2,
            items: 45_000,
            customers: 300,
        };
        let j = jobs(&s);
        let items: u32 = j
            .iter()
            .map(|j| match j {
                Job::Items { from, to } => to - from + 1,
                _ => 0,
            })
            .sum();
        assert_eq!(items, 45_000);
        let stock: u32 = j
            .iter()
            .map(|j| match j {
                Job::Stock { from, to, .. } => to - from + 1,
                _ => 0,
            })
            .sum();
        assert_eq!(stock, 90_000);
        assert_eq!(
            j.iter().filter(|j| matches!(j, Job::Orders { .. })).count(),
            20
        );
        assert_eq!(
            j.iter()
                .filter(|j| matches!(j, Job::Warehouse { .. }))
                .count(),
            2
        );
        assert_eq!(money(1), "0.01");
        assert_eq!(money(500_000), "5000.00");
        assert_eq!(rate(500), "0.0500");
    }
}
