//! Fault injection, for tests only: lets a test make a connection panic in the middle of a
//! command, to check that the connection handlers survive it (the connection is closed and
//! logged, counters stay right, the server keeps serving).
//!
//! The same switch makes loopback clients subject to `max_connect_errors` (MySQL, and shoal
//! otherwise, leave loopback out of the host cache), so that host blocking can be tested on one
//! machine.
//!
//! Off unless the server process was started with `SHOAL_FAULT_INJECTION=1` in its environment
//! (read once, by [`crate::Server::new`]); with it off the statements below are ordinary SQL
//! and fail as unknown functions. With it on, a COM_QUERY statement that is exactly (case and
//! spaces aside)
//!
//! - `SELECT shoal_debug_panic()` panics while executing;
//! - `SELECT shoal_debug_panic('process_list')` panics while holding the server-wide
//!   process-list mutex, which poisons it: every later connection then depends on the session
//!   layer recovering poisoned locks (`unwrap_or_else(PoisonError::into_inner)`).

use std::sync::PoisonError;

use crate::Server;

/// The environment variable that enables fault injection.
pub const ENV: &str = "SHOAL_FAULT_INJECTION";

/// Whether this process was started with fault injection enabled.
pub(crate) fn enabled_from_env() -> bool {
    std::env::var(ENV).is_ok_and(|v| v == "1")
}

/// Panics if `sql` is one of the fault-injection statements (see the module docs).
pub(crate) fn check(server: &Server, sql: &str) {
    let s: String = sql
        .trim()
        .trim_end_matches(';')
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    match s.as_str() {
        "selectshoal_debug_panic()" => panic!("fault injection: shoal_debug_panic()"),
        "selectshoal_debug_panic('process_list')" => {
            let _held = server
                .processes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            panic!(
                "fault injection: shoal_debug_panic('process_list') with the process list locked"
            );
        }
        _ => {}
    }
}
