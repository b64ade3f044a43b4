//! System records: small named records other layers keep next to the catalog (accounts and
//! privileges today), with the catalog's durability.
//!
//! A record is `(kind, name) -> bytes` under the meta key space (`SPACE_META`, `b'S'`, kind,
//! name), so it lives in the same RocksDB, goes through the same WAL and is replayed by the same
//! recovery as table definitions. [`Engine::write_system`] applies any number of puts and
//! deletes as one WriteBatch with a synced WAL write (like DDL, whatever
//! `innodb_flush_log_at_trx_commit` says): once it returns, the change survives `kill -9` and
//! power loss, and a crash never leaves half of it (RENAME USER is one batch). The store does
//! not interpret the bytes; the session layer keeps its own serialisation.
//!
//! System records are DDL-rate data: readers load them all at startup
//! ([`Engine::system_records`]) and keep them in memory; nothing on a statement path reads
//! RocksDB for them.

use rocksdb::WriteBatch;

use crate::catalog::SPACE_META;
use crate::engine::Engine;
use crate::error::Result;

/// Meta-space tag of system records.
const TAG: u8 = b'S';

fn key(kind: u8, name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + name.len());
    k.extend_from_slice(&[SPACE_META, TAG, kind]);
    k.extend_from_slice(name);
    k
}

/// One change of [`Engine::write_system`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemWrite {
    /// Create or replace record `name` of `kind` with the bytes.
    Put(u8, Vec<u8>, Vec<u8>),
    /// Remove record `name` of `kind` (absent is fine).
    Delete(u8, Vec<u8>),
}

impl Engine {
    /// Every record of `kind` as (name, value), in name order.
    pub fn system_records(&self, kind: u8) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let prefix = key(kind, b"");
        let mut out = Vec::new();
        for item in self.raw_db().iterator(rocksdb::IteratorMode::From(
            &prefix,
            rocksdb::Direction::Forward,
        )) {
            let (k, v) = item?;
            if !k.starts_with(&prefix) {
                break;
            }
            out.push((k[prefix.len()..].to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Applies `writes` atomically with a synced WAL write.
    pub fn write_system(&self, writes: &[SystemWrite]) -> Result<()> {
        let mut b = WriteBatch::default();
        for w in writes {
            match w {
                SystemWrite::Put(kind, name, value) => b.put(key(*kind, name), value),
                SystemWrite::Delete(kind, name) => b.delete(key(*kind, name)),
            }
        }
        self.write_batch_sync(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;

    #[test]
    fn records_survive_reopen_and_batches_are_atomic() {
        let dir = std::env::temp_dir().join(format!("shoal-system-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let e = Engine::open(EngineConfig::new(&dir)).unwrap();
            e.write_system(&[
                SystemWrite::Put(b'U', b"a".to_vec(), b"1".to_vec()),
                SystemWrite::Put(b'U', b"b".to_vec(), b"2".to_vec()),
                SystemWrite::Put(b'V', b"a".to_vec(), b"x".to_vec()),
            ])
            .unwrap();
            e.write_system(&[
                SystemWrite::Delete(b'U', b"a".to_vec()),
                SystemWrite::Put(b'U', b"c".to_vec(), b"3".to_vec()),
            ])
            .unwrap();
            // Table definitions are not system records and vice versa.
            e.create_database("d").unwrap();
            e.close().unwrap();
        }
        let e = Engine::open(EngineConfig::new(&dir)).unwrap();
        assert_eq!(
            e.system_records(b'U').unwrap(),
            vec![
                (b"b".to_vec(), b"2".to_vec()),
                (b"c".to_vec(), b"3".to_vec())
            ]
        );
        assert_eq!(e.system_records(b'V').unwrap().len(), 1);
        assert!(e.database_exists("d"));
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
