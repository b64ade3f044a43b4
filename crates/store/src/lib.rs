//! Durable storage on embedded RocksDB.
