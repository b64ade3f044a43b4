//! Thread pool for connection servers (see the crate README and docs/ARCHITECTURE.md).
