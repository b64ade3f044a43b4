//! `check tpcc`: TPC-C's consistency conditions 1-4 (clause 3.3.2), read in one transaction:
//!
//! 1. per warehouse: `W_YTD = sum(D_YTD)`;
//! 2. per district: `D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)` (the new_order part only when
//!    the district has undelivered orders);
//! 3. per district: `max(NO_O_ID) - min(NO_O_ID) + 1 = count(new_order rows)`;
//! 4. per district: `sum(O_OL_CNT) = count(order_line rows)`.

use super::txn::{cents_str, parse_cents};
use crate::client::query_rows;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::collections::BTreeMap;

/// A condition that does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// 1..=4.
    pub condition: u8,
    pub warehouse: u32,
    /// None for condition 1 (per warehouse).
    pub district: Option<u32>,
    pub detail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "consistency condition {} ({}) fails for warehouse {}",
            self.condition,
            CONDITIONS[usize::from(self.condition) - 1],
            self.warehouse
        )?;
        if let Some(d) = self.district {
            write!(f, " district {d}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// The four conditions' formulas.
pub const CONDITIONS: [&str; 4] = [
    "W_YTD = sum(D_YTD)",
    "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
    "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW-ORDER rows)",
    "sum(O_OL_CNT) = count(ORDER-LINE rows)",
];

/// What was checked.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub warehouses: usize,
    pub districts: usize,
    /// Districts without undelivered orders (the new_order parts of 2 and 3 do not apply).
    pub empty_new_order: usize,
    pub failures: Vec<Failure>,
}

type Key = (u32, u32);

fn num(v: &Option<String>) -> Result<i64, String> {
    v.as_deref()
        .ok_or_else(|| "NULL".to_string())
        .and_then(|s| {
            s.trim()
                .parse::<i64>()
                .or_else(|_| {
                    parse_cents(s)
                        .filter(|c| c % 100 == 0)
                        .map(|c| c / 100)
                        .ok_or(())
                })
                .map_err(|_| format!("'{s}' is not an integer"))
        })
}

fn money(v: &Option<String>) -> Result<i64, String> {
    v.as_deref()
        .and_then(parse_cents)
        .ok_or_else(|| format!("{v:?} is not a decimal"))
}

async fn rows(conn: &mut Conn, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    query_rows(conn, sql)
        .await
        .map(|(_, r)| r)
        .map_err(|e| format!("{sql}: {e}"))
}

/// Per (w, d) map of the integer columns after the first two.
async fn by_district(conn: &mut Conn, sql: &str) -> Result<BTreeMap<Key, Vec<i64>>, String> {
    let mut m = BTreeMap::new();
    for r in rows(conn, sql).await? {
        let key = (num(&r[0])? as u32, num(&r[1])? as u32);
        let vals = r[2..].iter().map(num).collect::<Result<Vec<_>, _>>()?;
        m.insert(key, vals);
    }
    Ok(m)
}

/// Checks conditions 1-4 on a consistent snapshot.
pub async fn check(conn: &mut Conn) -> Result<Report, String> {
    conn.query_drop("BEGIN")
        .await
        .map_err(|e| format!("BEGIN: {e}"))?;
    let r = check_in_trx(conn).await;
    let _ = conn.query_drop("COMMIT").await;
    r
}

async fn check_in_trx(conn: &mut Conn) -> Result<Report, String> {
    let mut rep = Report::default();
    // 1. W_YTD = sum(D_YTD)
    let w_ytd = rows(conn, "SELECT w_id, w_ytd FROM warehouse ORDER BY w_id").await?;
    let mut d_ytd = BTreeMap::new();
    for r in rows(
        conn,
        "SELECT d_w_id, SUM(d_ytd) FROM district GROUP BY d_w_id",
    )
    .await?
    {
        d_ytd.insert(num(&r[0])? as u32, money(&r[1])?);
    }
    rep.warehouses = w_ytd.len();
    for r in &w_ytd {
        let w = num(&r[0])? as u32;
        let wy = money(&r[1])?;
        match d_ytd.get(&w) {
            Some(&dy) if dy == wy => {}
            other => rep.failures.push(Failure {
                condition: 1,
                warehouse: w,
                district: None,
                detail: format!(
                    "W_YTD = {}, sum(D_YTD) = {}",
                    cents_str(wy),
                    other.map_or("no districts".into(), |c| cents_str(*c))
                ),
            }),
        }
    }
    // 2-4, per district.
    let next = by_district(
        conn,
        "SELECT d_w_id, d_id, d_next_o_id FROM district ORDER BY d_w_id, d_id",
    )
    .await?;
    let orders = by_district(
        conn,
        "SELECT o_w_id, o_d_id, MAX(o_id), SUM(o_ol_cnt) FROM orders GROUP BY o_w_id, o_d_id",
    )
    .await?;
    let new_orders = by_district(
        conn,
        "SELECT no_w_id, no_d_id, MAX(no_o_id), MIN(no_o_id), COUNT(*) FROM new_order \
         GROUP BY no_w_id, no_d_id",
    )
    .await?;
    let lines = by_district(
        conn,
        "SELECT ol_w_id, ol_d_id, COUNT(*) FROM order_line GROUP BY ol_w_id, ol_d_id",
    )
    .await?;
    rep.districts = next.len();
    for (&(w, d), v) in &next {
        let mut fail = |condition: u8, detail: String| {
            rep.failures.push(Failure {
                condition,
                warehouse: w,
                district: Some(d),
                detail,
            })
        };
        let next_m1 = v[0] - 1;
        let (max_o, ol_cnt) = orders
            .get(&(w, d))
            .map_or((None, 0), |o| (Some(o[0]), o[1]));
        let no = new_orders.get(&(w, d));
        let max_o_s = max_o.map_or("none".into(), |m| m.to_string());
        match no {
            Some(no) => {
                if Some(next_m1) != max_o || no[0] != next_m1 {
                    fail(
                        2,
                        format!(
                            "D_NEXT_O_ID - 1 = {next_m1}, max(O_ID) = {max_o_s}, max(NO_O_ID) = {}",
                            no[0]
                        ),
                    );
                }
                if no[0] - no[1] + 1 != no[2] {
                    fail(
                        3,
                        format!(
                            "max(NO_O_ID) = {}, min(NO_O_ID) = {}, count = {}",
                            no[0], no[1], no[2]
                        ),
                    );
                }
            }
            None => {
                rep.empty_new_order += 1;
                if Some(next_m1) != max_o {
                    fail(
                        2,
                        format!(
                            "D_NEXT_O_ID - 1 = {next_m1}, max(O_ID) = {max_o_s} (no new_order rows)"
                        ),
                    );
                }
            }
        }
        let ol = lines.get(&(w, d)).map_or(0, |l| l[0]);
        if ol_cnt != ol {
            fail(
                4,
                format!("sum(O_OL_CNT) = {ol_cnt}, count(ORDER-LINE) = {ol}"),
            );
        }
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_the_condition_and_district() {
        let f = Failure {
            condition: 2,
            warehouse: 1,
            district: Some(3),
            detail: "D_NEXT_O_ID - 1 = 5, max(O_ID) = 6, max(NO_O_ID) = 6".into(),
        };
        assert_eq!(
            f.to_string(),
            "consistency condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)) fails for \
             warehouse 1 district 3: D_NEXT_O_ID - 1 = 5, max(O_ID) = 6, max(NO_O_ID) = 6"
        );
        assert_eq!(num(&Some("3001".into())), Ok(3001));
        assert_eq!(num(&Some("3001.00".into())), Ok(3001));
        assert!(num(&None).is_err());
        assert_eq!(money(&Some("300000.00".into())), Ok(30_000_000));
    }
}
