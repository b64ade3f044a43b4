//! The thread pool's contract: the vocabulary the pool (`shoal-pool`) and the code it schedules
//! (the session layer, `shoal-session`) share, without either depending on the other.
//!
//! After every command the pool asks its handler for a [`PrioHint`]: whether the session is in
//! a transaction or holds locks (the lock-holder guarantee and the high queue) and the
//! session's own `thread_pool_priority` ([`SessionPriority`]), `thread_pool_high_prio_mode`
//! ([`HighPrioMode`]) and `thread_pool_high_prio_tickets`. The session computes the hint from
//! its variables; the server's pool handler passes it through untouched. Before this crate the
//! session defined mirror types (the mode as a string) that the handler converted back after
//! every command.
//!
//! Why a crate of its own rather than `shoal-wait`, the other leaf both sides use: `shoal-wait`
//! is the contract of *blocking code* (storage, SQL functions) with whatever scheduler runs it,
//! and stays a few lines that every layer can afford; this crate is the contract of the *pool*
//! with the session layer, and it grows with the pool's knobs. Neither depends on anything.

#![warn(missing_docs)]

/// What the session holds after a command; decides priority and the lock-holder guarantee.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrioHint {
    /// The session is inside a transaction (what counts is the handler's call: the server also
    /// counts an implicit one under `autocommit=0`).
    pub in_transaction: bool,
    /// The session holds row, table, metadata or user locks.
    pub holds_locks: bool,
    /// The session's own priority (MariaDB `thread_pool_priority`): `High`/`Low` pick the queue
    /// outright, `Auto` applies the high-priority mode. Never affects `must_run`.
    pub priority: SessionPriority,
    /// The session's own `thread_pool_high_prio_mode` (Percona session scope); `None`: the
    /// pool's global mode.
    pub mode: Option<HighPrioMode>,
    /// The session's own `thread_pool_high_prio_tickets`; `None`: the pool's global value.
    pub tickets: Option<u64>,
}

impl PrioHint {
    /// Whether the session must always get a thread (see the `shoal-pool` crate doc).
    pub fn must_run(self) -> bool {
        self.in_transaction || self.holds_locks
    }
}

/// A session's requested queue (MariaDB `thread_pool_priority`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionPriority {
    /// Decided by the high-priority mode and tickets (the default).
    #[default]
    Auto,
    /// Always the high queue.
    High,
    /// Always the low queue (lock holders still get the lock-holder guarantee).
    Low,
}

impl SessionPriority {
    /// Every value, in the order of the variable's allowed values.
    pub const ALL: [SessionPriority; 3] = [
        SessionPriority::High,
        SessionPriority::Low,
        SessionPriority::Auto,
    ];

    /// The variable's spelling (`high`, `low`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            SessionPriority::High => "high",
            SessionPriority::Low => "low",
            SessionPriority::Auto => "auto",
        }
    }

    /// The value spelled `s` (any case); `None` for anything else.
    pub fn from_name(s: &str) -> Option<SessionPriority> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
    }
}

/// `thread_pool_high_prio_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HighPrioMode {
    /// High while in a transaction or holding locks, and tickets remain.
    #[default]
    Transactions,
    /// Every statement is high.
    Statements,
    /// Nothing is high (except login, KILL and timeouts).
    None,
}

impl HighPrioMode {
    /// Every value, in the order of the variable's allowed values.
    pub const ALL: [HighPrioMode; 3] = [
        HighPrioMode::Transactions,
        HighPrioMode::Statements,
        HighPrioMode::None,
    ];

    /// The variable's spelling (`transactions`, `statements`, `none`).
    pub fn name(self) -> &'static str {
        match self {
            HighPrioMode::Transactions => "transactions",
            HighPrioMode::Statements => "statements",
            HighPrioMode::None => "none",
        }
    }

    /// The value spelled `s` (any case); `None` for anything else.
    pub fn from_name(s: &str) -> Option<HighPrioMode> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for p in SessionPriority::ALL {
            assert_eq!(SessionPriority::from_name(p.name()), Some(p));
            assert_eq!(
                SessionPriority::from_name(&p.name().to_uppercase()),
                Some(p)
            );
        }
        for m in HighPrioMode::ALL {
            assert_eq!(HighPrioMode::from_name(m.name()), Some(m));
        }
        assert_eq!(SessionPriority::from_name("bogus"), None);
        assert_eq!(HighPrioMode::from_name(""), None);
    }
}
