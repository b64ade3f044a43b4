//! The thread pool's variables are declared once, in the table `shoal_sched::vars::VARIABLES`:
//! their defaults (the pool's `Config::default()`), SHOW VARIABLES, startup options and
//! SET GLOBAL all come from it. Checked through the real binary: a fresh server shows exactly
//! the table's variables with the table's defaults, and every variable set as a startup option
//! or with SET GLOBAL reads back (and the size reaches the running pool).

mod support;

use std::collections::BTreeMap;

use mysql::prelude::Queryable;
use shoal_sched::vars::{Domain, Value, Var, VARIABLES};
use shoal_sched::Config;
use support::Shoal;

/// How SHOW VARIABLES prints a table value.
fn shown(v: &Value) -> String {
    match v {
        Value::Bool(true) => "ON".into(),
        Value::Bool(false) => "OFF".into(),
        Value::UInt(n) => n.to_string(),
        Value::Word(w) => w.clone(),
    }
}

/// `SHOW GLOBAL VARIABLES LIKE 'thread_pool%'` as a map.
fn pool_variables(c: &mut mysql::Conn) -> BTreeMap<String, String> {
    c.query::<(String, String), _>("SHOW GLOBAL VARIABLES LIKE 'thread\\_pool\\_%'")
        .unwrap()
        .into_iter()
        .collect()
}

fn status(c: &mut mysql::Conn, name: &str) -> u64 {
    let (_, v): (String, String) = c
        .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .unwrap()
        .unwrap_or_else(|| panic!("no status {name}"));
    v.parse().unwrap()
}

/// A value of `var` other than its default, inside its domain.
fn other_value(var: &Var) -> Value {
    let d = var.default_value();
    match var.domain {
        Domain::Bool => Value::Bool(!d.bool()),
        Domain::UInt { min, max } => Value::UInt(if d.uint() < max { d.uint() + 1 } else { min }),
        Domain::Enum(words) => {
            Value::Word(words.iter().find(|w| **w != d.word()).unwrap().to_string())
        }
    }
}

#[test]
fn a_fresh_server_shows_the_table_with_the_pools_defaults() {
    let s = Shoal::start("pool-vars-defaults", &["--thread-handling=pool-of-threads"]);
    let mut c = s.conn();
    let shown_now = pool_variables(&mut c);
    let names: Vec<&str> = shown_now.keys().map(String::as_str).collect();
    let table: Vec<&str> = VARIABLES.iter().map(|v| v.name).collect();
    assert_eq!(
        names, table,
        "SHOW VARIABLES and the pool table list other variables"
    );
    let config = Config::default();
    for var in VARIABLES {
        let from_config = shown(&(var.get)(&config));
        assert_eq!(shown(&var.default_value()), from_config, "{}", var.name);
        assert_eq!(shown_now[var.name], from_config, "{}", var.name);
        // Sessions start from the global default too.
        let session: Option<String> = c
            .query_first(format!("SELECT @@session.{}", var.name))
            .unwrap_or(None);
        if var.scope == shoal_sched::vars::Scope::Both {
            let session = session.unwrap();
            assert!(
                session.eq_ignore_ascii_case(&from_config),
                "{}: session {session}",
                var.name
            );
        }
    }
    // The running pool was configured from the same defaults.
    assert_eq!(status(&mut c, "Threadpool_groups"), config.size as u64);
}

#[test]
fn every_variable_is_a_startup_option_and_dynamic_ones_are_settable() {
    let options: Vec<String> = VARIABLES
        .iter()
        .map(|v| format!("--{}={}", v.name.replace('_', "-"), shown(&other_value(v))))
        .collect();
    let mut args = vec!["--thread-handling=pool-of-threads"];
    args.extend(options.iter().map(String::as_str));
    let s = Shoal::start("pool-vars-options", &args);
    let mut c = s.conn();
    let started = pool_variables(&mut c);
    for var in VARIABLES {
        assert_eq!(started[var.name], shown(&other_value(var)), "{}", var.name);
    }
    let size = other_value(shoal_sched::vars::find("thread_pool_size").unwrap()).uint();
    assert_eq!(status(&mut c, "Threadpool_groups"), size);
    // Back to the defaults with SET GLOBAL (a read-only variable is refused, 1238).
    for var in VARIABLES {
        let r = c.query_drop(format!("SET GLOBAL {} = DEFAULT", var.name));
        if var.dynamic {
            r.unwrap_or_else(|e| panic!("{}: {e}", var.name));
        } else {
            match r {
                Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1238, "{}", var.name),
                other => panic!("{}: {other:?}", var.name),
            }
        }
    }
    let reset = pool_variables(&mut c);
    for var in VARIABLES.iter().filter(|v| v.dynamic) {
        assert_eq!(reset[var.name], shown(&var.default_value()), "{}", var.name);
    }
    // The size reached the running pool.
    assert_eq!(
        status(&mut c, "Threadpool_groups"),
        Config::default().size as u64
    );
}
