//! A map from prepared-statement id to what a connection keeps for it.
//!
//! Statement ids are handed out per connection in increasing order, and a connection holds few
//! statements (sysbench's read-write workload prepares a dozen). Both the protocol layer and
//! the session look a statement up on every COM_STMT_EXECUTE, and at thousands of connections
//! that lookup touches memory no other connection uses, so it is a cache miss more often than
//! not. A hash table costs a hash of the id and one more miss (its control bytes) before the
//! entry; ids sorted in a vector of their own, searched by bisection, take one or two cache
//! lines for a few dozen statements, and the value is then one more line in a parallel vector.
//! (With the id next to the value, every probe of the bisection was a line of its own: at 64
//! sysbench clients the two lookups of an execute were 1.4 % of the server's samples.)
//! Inserting keeps the order, so an id that arrives out of order (a client choosing its own,
//! through a proxy) still works.

/// Statement ids in ascending order, and their values at the same positions.
#[derive(Debug)]
pub struct StmtMap<V> {
    /// Sorted statement ids.
    ids: Vec<u32>,
    /// `vals[i]` belongs to `ids[i]`.
    vals: Vec<V>,
}

impl<V> Default for StmtMap<V> {
    fn default() -> Self {
        Self {
            ids: Vec::new(),
            vals: Vec::new(),
        }
    }
}

impl<V> StmtMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, id: u32) -> Result<usize, usize> {
        // The newest statement is the usual last entry: check it before bisecting.
        match self.ids.last() {
            Some(&last) if last == id => Ok(self.ids.len() - 1),
            Some(&last) if last < id => Err(self.ids.len()),
            _ => self.ids.binary_search(&id),
        }
    }

    /// The value of statement `id`.
    pub fn get(&self, id: u32) -> Option<&V> {
        self.find(id).ok().map(|i| &self.vals[i])
    }

    /// The value of statement `id`, mutably.
    pub fn get_mut(&mut self, id: u32) -> Option<&mut V> {
        self.find(id).ok().map(|i| &mut self.vals[i])
    }

    /// Sets statement `id`'s value; returns the one it replaces.
    pub fn insert(&mut self, id: u32, v: V) -> Option<V> {
        match self.find(id) {
            Ok(i) => Some(std::mem::replace(&mut self.vals[i], v)),
            Err(i) => {
                self.ids.insert(i, id);
                self.vals.insert(i, v);
                None
            }
        }
    }

    /// Removes statement `id`; returns its value.
    pub fn remove(&mut self, id: u32) -> Option<V> {
        self.find(id).ok().map(|i| {
            self.ids.remove(i);
            self.vals.remove(i)
        })
    }

    /// Number of statements.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there is no statement.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Removes every statement, returning their ids in order.
    pub fn drain_ids(&mut self) -> Vec<u32> {
        self.vals.clear();
        std::mem::take(&mut self.ids)
    }

    /// Removes every statement.
    pub fn clear(&mut self) {
        self.ids.clear();
        self.vals.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::StmtMap;
    use std::collections::BTreeMap;

    /// Random operations agree with a BTreeMap (ids from a small range, so that replacing,
    /// removing and out-of-order inserts all happen).
    #[test]
    fn agrees_with_a_btree_map() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut m = StmtMap::new();
        let mut model = BTreeMap::new();
        for step in 0..20_000u64 {
            let id = (next() % 24) as u32;
            match next() % 5 {
                0 | 1 => assert_eq!(m.insert(id, step), model.insert(id, step), "insert {id}"),
                2 => assert_eq!(m.remove(id), model.remove(&id), "remove {id}"),
                3 => {
                    if let Some(v) = m.get_mut(id) {
                        *v += 1;
                    }
                    if let Some(v) = model.get_mut(&id) {
                        *v += 1;
                    }
                }
                _ => assert_eq!(m.get(id), model.get(&id), "get {id}"),
            }
            assert_eq!(m.len(), model.len());
            assert_eq!(m.is_empty(), model.is_empty());
            if step % 5000 == 4999 {
                let ids: Vec<u32> = model.keys().copied().collect();
                assert_eq!(m.drain_ids(), ids);
                model.clear();
            }
        }
        m.insert(1, 0);
        m.clear();
        assert!(m.is_empty() && m.get(1).is_none());
    }
}
