//! The pool's variables, declared once: the `thread_pool_*` table.
//!
//! Each [`Var`] says everything the server needs about one knob: its mysqld name, its domain
//! (range or allowed values), its scope and whether `SET GLOBAL` may change it, how to read it
//! from a [`Config`] and how to write it into one. The table drives every place a knob shows:
//!
//! * its **default** is what [`Config::default`] holds ([`Var::default_value`]), so the pool's
//!   defaults are the one copy; the session layer's variable registry builds its definitions
//!   from this table (SHOW VARIABLES, `@@thread_pool_*`, validation of `SET` and of startup
//!   options, which the server parses by variable name);
//! * at **startup** the server starts from `Config::default()` and writes each variable's value
//!   into it with [`Var::set`];
//! * at **`SET GLOBAL`** the server writes the new value into the running pool's
//!   [`Config`] snapshot the same way and asks the pool to apply the variable's [`Knob`]
//!   (`shoal_pool::Pool::apply`), which calls the matching live setter.
//!
//! Adding a knob therefore touches this crate (a [`Config`] field, its default, one table entry
//! and a [`Knob`]) and the pool (what the knob does, and its arm in `Pool::apply`).
//!
//! Two entries have no [`Config`] field: `thread_pool_priority` is per session only (it travels
//! in the [`crate::PrioHint`]; its default is [`SessionPriority::default`]), and
//! `thread_pool_exact_stats` is accepted for MariaDB compatibility (the statistics here are
//! always exact).

use std::time::Duration;

use crate::{Config, HighPrioMode, SessionPriority};

/// Which live setting of the pool a variable changes (see `shoal_pool::Pool::apply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    /// `thread_pool_size`.
    Size,
    /// `thread_pool_oversubscribe`.
    Oversubscribe,
    /// `thread_pool_adaptive`.
    Adaptive,
    /// `thread_pool_adaptive_groups`.
    AdaptiveGroups,
    /// `thread_pool_stall_limit`.
    StallLimit,
    /// `thread_pool_max_threads`.
    MaxThreads,
    /// `thread_pool_idle_timeout`.
    IdleTimeout,
    /// `thread_pool_prio_kickup_timer`.
    PrioKickupTimer,
    /// `thread_pool_high_prio_mode` (the global value: sessions carry their own).
    HighPrioMode,
    /// `thread_pool_high_prio_tickets` (the global value: sessions carry their own).
    HighPrioTickets,
    /// `thread_pool_dedicated_listener`.
    DedicatedListener,
    /// `thread_pool_cpu_affinity`.
    CpuAffinity,
    /// `thread_pool_linger_usec`.
    Linger,
    /// `thread_pool_linger_threads`.
    LingerThreads,
    /// `thread_pool_work_stealing`.
    WorkStealing,
    /// `thread_pool_balance_usec`.
    Balance,
    /// No live setting: the variable is per session or informational.
    None,
}

/// The values a variable may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Domain {
    /// ON/OFF.
    Bool,
    /// An unsigned integer within `[min, max]`.
    UInt {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// One of these spellings (the first is index 0 for `SET x = 0`).
    Enum(&'static [&'static str]),
}

/// Where a variable exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `@@global` only.
    Global,
    /// Global and per session: sessions copy the global value when they connect.
    Both,
}

/// A variable's value in the table's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A [`Domain::Bool`] value.
    Bool(bool),
    /// A [`Domain::UInt`] value.
    UInt(u64),
    /// A [`Domain::Enum`] value, in its canonical spelling.
    Word(String),
}

impl Value {
    /// As a number (booleans 0/1, words 0).
    pub fn uint(&self) -> u64 {
        match self {
            Value::Bool(b) => u64::from(*b),
            Value::UInt(n) => *n,
            Value::Word(_) => 0,
        }
    }

    /// As a boolean (non-zero numbers; `ON`).
    pub fn bool(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::UInt(n) => *n != 0,
            Value::Word(w) => w.eq_ignore_ascii_case("on"),
        }
    }

    /// As a word (empty for numbers and booleans).
    pub fn word(&self) -> &str {
        match self {
            Value::Word(w) => w,
            _ => "",
        }
    }
}

/// One pool variable (see the module doc).
#[derive(Debug, Clone, Copy)]
pub struct Var {
    /// mysqld name, lower case with underscores.
    pub name: &'static str,
    /// The live setting a `SET GLOBAL` changes.
    pub knob: Knob,
    /// Range or allowed values.
    pub domain: Domain,
    /// Global only, or global and session.
    pub scope: Scope,
    /// Whether `SET GLOBAL` may change it (otherwise only a startup option).
    pub dynamic: bool,
    /// Its value in a configuration.
    pub get: fn(&Config) -> Value,
    /// Writes a value (already validated against [`Var::domain`]) into a configuration.
    pub set: fn(&mut Config, &Value),
}

impl Var {
    /// The compiled-in default: what [`Config::default`] holds.
    pub fn default_value(&self) -> Value {
        (self.get)(&Config::default())
    }
}

const U32MAX: u64 = u32::MAX as u64;

fn ms(d: Duration) -> Value {
    Value::UInt(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn usec(d: Duration) -> Value {
    Value::UInt(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn count(n: usize) -> Value {
    Value::UInt(n as u64)
}

/// Every pool variable, in name order.
pub const VARIABLES: &[Var] = &[
    Var {
        name: "thread_pool_adaptive",
        knob: Knob::Adaptive,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::Bool(c.adaptive),
        set: |c, v| c.adaptive = v.bool(),
    },
    Var {
        name: "thread_pool_adaptive_groups",
        knob: Knob::AdaptiveGroups,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::Bool(c.adaptive_groups),
        set: |c, v| c.adaptive_groups = v.bool(),
    },
    Var {
        name: "thread_pool_balance_usec",
        knob: Knob::Balance,
        domain: Domain::UInt {
            min: 0,
            max: 60_000_000,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| usec(c.balance),
        set: |c, v| c.balance = Duration::from_micros(v.uint()),
    },
    Var {
        name: "thread_pool_cpu_affinity",
        knob: Knob::CpuAffinity,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::Bool(c.cpu_affinity),
        set: |c, v| c.cpu_affinity = v.bool(),
    },
    Var {
        name: "thread_pool_dedicated_listener",
        knob: Knob::DedicatedListener,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::Bool(c.dedicated_listener),
        set: |c, v| c.dedicated_listener = v.bool(),
    },
    Var {
        name: "thread_pool_exact_stats",
        knob: Knob::None,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: false,
        get: |_| Value::Bool(true),
        set: |_, _| {},
    },
    Var {
        name: "thread_pool_high_prio_mode",
        knob: Knob::HighPrioMode,
        domain: Domain::Enum(&["transactions", "statements", "none"]),
        scope: Scope::Both,
        dynamic: true,
        get: |c| Value::Word(c.high_prio_mode.name().to_string()),
        set: |c, v| c.high_prio_mode = HighPrioMode::from_name(v.word()).unwrap_or_default(),
    },
    Var {
        name: "thread_pool_high_prio_tickets",
        knob: Knob::HighPrioTickets,
        domain: Domain::UInt {
            min: 0,
            max: U32MAX,
        },
        scope: Scope::Both,
        dynamic: true,
        get: |c| Value::UInt(c.high_prio_tickets),
        set: |c, v| c.high_prio_tickets = v.uint(),
    },
    Var {
        name: "thread_pool_idle_timeout",
        knob: Knob::IdleTimeout,
        domain: Domain::UInt {
            min: 1,
            max: U32MAX,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::UInt(c.idle_timeout.as_secs()),
        set: |c, v| c.idle_timeout = Duration::from_secs(v.uint()),
    },
    Var {
        name: "thread_pool_linger_threads",
        knob: Knob::LingerThreads,
        domain: Domain::UInt { min: 1, max: 65536 },
        scope: Scope::Global,
        dynamic: true,
        get: |c| count(c.linger_threads),
        set: |c, v| c.linger_threads = v.uint() as usize,
    },
    Var {
        name: "thread_pool_linger_usec",
        knob: Knob::Linger,
        domain: Domain::UInt {
            min: 0,
            max: 60_000_000,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| usec(c.linger),
        set: |c, v| c.linger = Duration::from_micros(v.uint()),
    },
    Var {
        name: "thread_pool_max_threads",
        knob: Knob::MaxThreads,
        domain: Domain::UInt { min: 1, max: 65536 },
        scope: Scope::Global,
        dynamic: true,
        get: |c| count(c.max_threads),
        set: |c, v| c.max_threads = v.uint().max(1) as usize,
    },
    Var {
        name: "thread_pool_oversubscribe",
        knob: Knob::Oversubscribe,
        domain: Domain::UInt { min: 1, max: 1000 },
        scope: Scope::Global,
        dynamic: true,
        get: |c| count(c.oversubscribe),
        set: |c, v| c.oversubscribe = v.uint() as usize,
    },
    Var {
        name: "thread_pool_prio_kickup_timer",
        knob: Knob::PrioKickupTimer,
        domain: Domain::UInt {
            min: 0,
            max: U32MAX,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| ms(c.prio_kickup_timer),
        set: |c, v| c.prio_kickup_timer = Duration::from_millis(v.uint()),
    },
    Var {
        name: "thread_pool_priority",
        knob: Knob::None,
        domain: Domain::Enum(&["high", "low", "auto"]),
        scope: Scope::Both,
        dynamic: true,
        get: |_| Value::Word(SessionPriority::default().name().to_string()),
        set: |_, _| {},
    },
    Var {
        name: "thread_pool_size",
        knob: Knob::Size,
        domain: Domain::UInt {
            min: 1,
            max: 100_000,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| count(c.size),
        set: |c, v| {
            c.size = v.uint().max(1) as usize;
            // Groups are allocated at start: room for at least the starting size.
            c.max_size = c.max_size.max(c.size);
        },
    },
    Var {
        name: "thread_pool_stall_limit",
        knob: Knob::StallLimit,
        domain: Domain::UInt {
            min: 1,
            max: U32MAX,
        },
        scope: Scope::Global,
        dynamic: true,
        get: |c| ms(c.stall_limit),
        set: |c, v| c.stall_limit = Duration::from_millis(v.uint().max(1)),
    },
    Var {
        name: "thread_pool_work_stealing",
        knob: Knob::WorkStealing,
        domain: Domain::Bool,
        scope: Scope::Global,
        dynamic: true,
        get: |c| Value::Bool(c.work_stealing),
        set: |c, v| c.work_stealing = v.bool(),
    },
];

/// The variable named `name` (canonical spelling).
pub fn find(name: &str) -> Option<&'static Var> {
    VARIABLES.iter().find(|v| v.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every default lies in its domain, and writing it into a default configuration changes
    /// nothing (each `get`/`set` pair reads and writes the same field in the same unit).
    #[test]
    fn defaults_are_in_domain_and_round_trip() {
        for v in VARIABLES {
            let d = v.default_value();
            match (v.domain, &d) {
                (Domain::Bool, Value::Bool(_)) => {}
                (Domain::UInt { min, max }, Value::UInt(n)) => {
                    assert!((min..=max).contains(n), "{}: {n}", v.name)
                }
                (Domain::Enum(words), Value::Word(w)) => {
                    assert!(words.contains(&w.as_str()), "{}: {w}", v.name)
                }
                _ => panic!("{}: default {d:?} outside {:?}", v.name, v.domain),
            }
            let mut c = Config::default();
            (v.set)(&mut c, &d);
            assert_eq!((v.get)(&c), d, "{}", v.name);
        }
    }

    /// A non-default value written with `set` reads back with `get` (the knobs with a field).
    #[test]
    fn set_then_get() {
        for v in VARIABLES.iter().filter(|v| v.knob != Knob::None) {
            let other = match v.domain {
                Domain::Bool => Value::Bool(!v.default_value().bool()),
                Domain::UInt { min, max } => {
                    let d = v.default_value().uint();
                    Value::UInt(if d < max { d + 1 } else { min })
                }
                Domain::Enum(words) => {
                    let d = v.default_value();
                    let w = words.iter().find(|w| **w != d.word()).unwrap();
                    Value::Word(w.to_string())
                }
            };
            let mut c = Config::default();
            (v.set)(&mut c, &other);
            assert_eq!((v.get)(&c), other, "{}", v.name);
        }
    }

    #[test]
    fn names_are_sorted_unique_and_prefixed() {
        for w in VARIABLES.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
        assert!(VARIABLES.iter().all(|v| v.name.starts_with("thread_pool_")));
        assert_eq!(find("thread_pool_size").unwrap().knob, Knob::Size);
        assert!(find("thread_pool_bogus").is_none());
    }
}
