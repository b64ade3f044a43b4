//! The correlated-subquery cache (MariaDB's "subquery cache", `expression cache`).
//!
//! A correlated subquery is run again for every row of its enclosing query. Its answer depends
//! only on the enclosing slots it reads ([`super::SubPlan::outer`]) when nothing else in it
//! varies within a statement, so the runner keeps, per subquery, the rows it returned for each
//! combination of those values and answers a repeated combination from the table. With a few
//! distinct outer values and many outer rows (a join feeding a `x = ALL (SELECT ..)`, a
//! correlated COUNT over a derived table) this turns a product of row counts into a sum: the
//! differential test met a query MariaDB answered in a millisecond that took shoal 31 s.
//!
//! **When it is used.** Only for correlated subqueries the binder found *stable*: no RAND,
//! UUID, SLEEP, BENCHMARK, lock functions, SYSDATE, LAST_INSERT_ID, and no user variable read or
//! assigned (a user variable is not an outer slot, and may change between rows). Uncorrelated
//! subqueries are already run once per execution.
//!
//! **Keys are exact.** Two values SQL calls equal may still give different answers (`'a'` and
//! `'A'` under CONCAT, `1.5` and `1.50` printed), so the key is each outer value's kind and exact
//! representation, never its collation key.
//!
//! **Bounds.** A subquery's table holds at most [`MAX_ROWS`] cached rows in all (a full table
//! caches nothing more, it keeps answering from what it has), every answer kept is charged to
//! the statement's memory budget (an answer that does not fit is simply not kept), and after [`PROBATION`] lookups a
//! table that hit less than a quarter of the time is dropped and turned off for the rest of the
//! statement: with all-distinct outer values (a correlated lookup by primary key) the cache
//! would only cost a key per row.

use std::collections::HashMap;
use std::sync::Arc;

use shoal_sql::value::Value;

/// Rows a subquery returned.
pub(super) type Rows = Arc<Vec<Vec<Value>>>;

/// Cached rows per subquery, at most.
pub(super) const MAX_ROWS: usize = 100_000;

/// Lookups before the hit rate decides whether the table stays.
pub(super) const PROBATION: u64 = 1024;

/// One correlated subquery's table of answers.
#[derive(Default)]
pub(super) struct Memo {
    map: HashMap<Vec<u8>, Rows>,
    /// Rows held in `map`, in all.
    rows: usize,
    lookups: u64,
    hits: u64,
    /// Turned off for this execution (hit rate too low).
    off: bool,
}

impl Memo {
    /// The key of `values` (the subquery's outer slots), or `None` when the table is off.
    pub fn key<'v>(&self, values: impl Iterator<Item = &'v Value>) -> Option<Vec<u8>> {
        if self.off {
            return None;
        }
        let mut k = Vec::with_capacity(32);
        for v in values {
            encode(v, &mut k);
        }
        Some(k)
    }

    /// The cached answer for `key`, counting the lookup.
    pub fn get(&mut self, key: &[u8]) -> Option<Rows> {
        self.lookups += 1;
        let hit = self.map.get(key).cloned();
        if hit.is_some() {
            self.hits += 1;
        } else if self.lookups >= PROBATION && self.hits * 4 < self.lookups {
            self.off = true;
            self.map = HashMap::new();
            self.rows = 0;
        }
        hit
    }

    /// Whether an answer of `rows` rows would be kept (the table is on and not full).
    pub fn accepts(&self, rows: usize) -> bool {
        !self.off && self.rows + rows <= MAX_ROWS
    }

    /// Remembers the answer for `key` (unless the table is off or full, see
    /// [`Memo::accepts`]).
    pub fn put(&mut self, key: Vec<u8>, rows: Rows) {
        if !self.accepts(rows.len()) {
            return;
        }
        self.rows += rows.len();
        self.map.insert(key, rows);
    }

    /// Whether the table was turned off (for tests).
    #[cfg(test)]
    pub fn is_off(&self) -> bool {
        self.off
    }
}

/// Appends an exact, self-delimiting encoding of `v`: a kind tag, then its bytes.
fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(0),
        Value::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::UInt(u) => {
            out.push(2);
            out.extend_from_slice(&u.to_le_bytes());
        }
        Value::Decimal(d) => {
            out.push(3);
            out.extend_from_slice(&d.mant.to_le_bytes());
            out.extend_from_slice(&d.scale.to_le_bytes());
        }
        Value::Double(f) => {
            out.push(4);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Str(s) => {
            out.push(5);
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(8);
            out.extend_from_slice(&(b.len() as u64).to_le_bytes());
            out.extend_from_slice(b);
        }
        Value::Date(d) | Value::DateTime(d, _) => {
            out.push(if matches!(v, Value::Date(_)) { 6 } else { 7 });
            out.extend_from_slice(&d.year.to_le_bytes());
            out.extend_from_slice(&[d.month, d.day, d.hour, d.minute, d.second]);
            out.extend_from_slice(&d.micro.to_le_bytes());
            if let Value::DateTime(_, fsp) = v {
                out.push(*fsp);
            }
        }
        Value::Time(t) => {
            out.push(9);
            out.extend_from_slice(&t.micros().to_le_bytes());
            out.push(t.fsp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(m: &Memo, v: &[Value]) -> Vec<u8> {
        m.key(v.iter()).unwrap()
    }

    #[test]
    fn keys_are_exact() {
        let m = Memo::default();
        let a = key(&m, &[Value::Str("a".into())]);
        assert_ne!(a, key(&m, &[Value::Str("A".into())]));
        assert_ne!(a, key(&m, &[Value::Str("a ".into())]));
        assert_ne!(key(&m, &[Value::Int(1)]), key(&m, &[Value::UInt(1)]));
        assert_ne!(key(&m, &[Value::Int(1)]), key(&m, &[Value::Double(1.0)]));
        // Self-delimiting: ("ab", "c") is not ("a", "bc").
        assert_ne!(
            key(&m, &[Value::Str("ab".into()), Value::Str("c".into())]),
            key(&m, &[Value::Str("a".into()), Value::Str("bc".into())])
        );
        assert_eq!(a, key(&m, &[Value::Str("a".into())]));
    }

    #[test]
    fn answers_repeats_and_turns_off_when_useless() {
        let mut m = Memo::default();
        let rows: Rows = Arc::new(vec![vec![Value::Int(7)]]);
        let k = key(&m, &[Value::Int(1)]);
        assert!(m.get(&k).is_none());
        m.put(k.clone(), rows.clone());
        assert_eq!(m.get(&k).unwrap()[0][0], Value::Int(7));
        // All-distinct keys: after the probation the table turns itself off.
        let mut lookups = 2;
        for i in 2.. {
            let Some(k) = m.key([Value::Int(i)].iter()) else {
                break;
            };
            lookups += 1;
            if m.get(&k).is_none() {
                m.put(k, rows.clone());
            }
        }
        assert!(m.is_off());
        assert_eq!(lookups, PROBATION);
        assert!(m.key([Value::Int(1)].iter()).is_none());
    }

    #[test]
    fn a_full_table_caches_nothing_more() {
        let mut m = Memo::default();
        let big: Rows = Arc::new(vec![vec![Value::Null]; MAX_ROWS]);
        m.put(key(&m, &[Value::Int(1)]), big);
        let k = key(&m, &[Value::Int(2)]);
        m.put(k.clone(), Arc::new(vec![vec![Value::Null]]));
        assert!(m.get(&k).is_none());
        assert!(m.get(&key(&m, &[Value::Int(1)])).is_some());
    }
}
