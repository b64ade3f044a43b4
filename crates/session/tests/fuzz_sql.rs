//! Fuzzing SQL text through parse, plan and execute on a real table engine, in-process.
//!
//! Inputs come from the grammar in `fuzz/sqlgen.rs` (statements over a small schema, token
//! mutations, splices, random text, multi-statement texts). Each runs through the session as
//! COM_QUERY does (or, for some, COM_STMT_PREPARE and COM_STMT_EXECUTE with random parameters)
//! on a 2 MiB worker stack. Invariants: no panic, every error a MySQL error (server error
//! number, SQLSTATE, no "internal error"), every result set encodable in the text and binary
//! protocols, every input done within `SHOAL_FUZZ_SLOW_MS` (a watchdog sends KILL QUERY, then
//! calls it a hang), RSS bounded. The schema is rebuilt, and the session reopened, every 250
//! inputs so that tables stay small.
//!
//! The suite runs a short seeded run; `scripts/fuzz.sh` runs 10^6 inputs (see `fuzz/mod.rs`
//! for the environment variables).

mod fuzz;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal_proto::{Backend, ErrorInfo, Response, Value as PValue};
use shoal_session::Session;

use fuzz::sqlgen::SqlGen;
use fuzz::{Config, Findings, Rig, Rss, Watchdog};

/// Inputs between schema rebuilds.
const RESET_EVERY: u64 = 250;

#[test]
fn fuzz_sql() {
    fuzz::install_panic_hook();
    let cfg = Config::from_env(10_000);
    let c = cfg.clone();
    let (done, elapsed, findings, rss) = fuzz::on_worker_stack(move || run(&c));
    fuzz::summary("sql", &cfg, done, elapsed, &findings, &rss);
    fuzz::assert_clean("sql", &cfg, &findings, &rss);
}

/// A random parameter value of any protocol type.
pub fn random_param(rng: &mut StdRng) -> PValue {
    match rng.gen_range(0..12) {
        0 => PValue::NULL,
        1 => PValue::Int(
            *[0, 1, -1, i64::MIN, i64::MAX, 127, -128, 65536]
                .get(rng.gen_range(0..8))
                .unwrap_or(&0),
        ),
        2 => PValue::Int(rng.gen_range(-100..100)),
        3 => PValue::UInt(
            *[0, u64::MAX, 1 << 63, 4294967295]
                .get(rng.gen_range(0..4))
                .unwrap_or(&0),
        ),
        4 => PValue::Float(
            *[0.0, -1.5, f32::NAN, f32::INFINITY, f32::MIN_POSITIVE]
                .get(rng.gen_range(0..5))
                .unwrap_or(&0.0),
        ),
        5 => PValue::Double(
            *[0.5, -0.0, f64::NAN, f64::NEG_INFINITY, 1e308, 5e-324]
                .get(rng.gen_range(0..6))
                .unwrap_or(&0.0),
        ),
        6..=8 => {
            let s = [
                "",
                "a",
                "abc",
                "h\u{e9}",
                "2024-01-01",
                "1.5",
                "99999999999999999999999",
                "x'y",
                "%",
                "NULL",
                "-0",
            ];
            PValue::Bytes(s[rng.gen_range(0..s.len())].as_bytes().to_vec())
        }
        9 => PValue::Bytes((0..rng.gen_range(0..40)).map(|_| rng.gen()).collect()),
        10 => PValue::Date(
            rng.gen_range(0..10000),
            rng.gen_range(0..14),
            rng.gen_range(0..33),
            rng.gen_range(0..25),
            rng.gen_range(0..61),
            rng.gen_range(0..61),
            rng.gen_range(0..1_100_000),
        ),
        _ => PValue::Time(
            rng.gen(),
            rng.gen_range(0..40),
            rng.gen_range(0..25),
            rng.gen_range(0..61),
            rng.gen_range(0..61),
            rng.gen_range(0..1_100_000),
        ),
    }
}

fn open(rig: &Rig) -> (Session, std::sync::Arc<fuzz::Ctl>) {
    let (mut s, ctl) = rig.root_session();
    let _ = fuzz::run_query(&mut s, "USE fz", false);
    // SELECTs stop by themselves well before the watchdog's KILL QUERY.
    let _ = fuzz::run_query(&mut s, "SET SESSION max_execution_time = 1000", false);
    (s, ctl)
}

/// Prepares `sql`, executes it up to twice with random parameters, closes it.
fn run_prepared(
    s: &mut Session,
    rng: &mut StdRng,
    id: u32,
    sql: &str,
) -> Vec<Result<Response, ErrorInfo>> {
    let mut out = Vec::new();
    s.command_begin(0x16);
    let p = s.prepare(id, sql);
    s.command_end();
    let ok = match p {
        Ok(ok) => ok,
        Err(e) => return vec![Err(e)],
    };
    for _ in 0..rng.gen_range(1..3) {
        let mut n = ok.params as usize;
        if rng.gen_bool(0.05) {
            n = rng.gen_range(0..4);
        }
        let params: Vec<PValue> = (0..n).map(|_| random_param(rng)).collect();
        s.command_begin(0x17);
        out.push(s.execute(id, &params));
        s.command_end();
    }
    s.command_begin(0x19);
    s.close_statement(id);
    s.command_end();
    out
}

fn run(cfg: &Config) -> (u64, std::time::Duration, Findings, Rss) {
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let mut rig = Rig::new("sql");
    rig.setup_schema();
    let mut wd = Watchdog::start("sql", cfg, rig.server.clone());
    let (mut s, mut ctl) = open(&rig);
    let mut gen = SqlGen::new();
    let mut pgen = SqlGen::new();
    pgen.placeholders = true;
    let mut findings = Findings::default();
    let mut rss = Rss::new();
    let started = Instant::now();
    let mut next_stmt = 1u32;
    // SHOAL_FUZZ_DUMP=1 prints every input and its outcome (for tuning the generator).
    let dump = std::env::var_os("SHOAL_FUZZ_DUMP").is_some();
    for i in 0..cfg.iters {
        if i > 0 && i % RESET_EVERY == 0 {
            s.disconnect();
            drop(s);
            fuzz::check_idle(&rig.server, &format!("before input {i}"), &mut findings);
            rig.setup_schema();
            (s, ctl) = open(&rig);
        }
        let prepared = rng.gen_bool(0.15);
        let sql = if prepared && rng.gen_bool(0.7) {
            pgen.statement(&mut rng)
        } else {
            gen.input(&mut rng)
        };
        // Multi-statement texts mostly run with CLIENT_MULTI_STATEMENTS (else: 1064).
        let multi = rng.gen_bool(if sql.contains(';') { 0.9 } else { 0.3 });
        wd.begin(s.id(), &sql);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            if prepared {
                next_stmt = next_stmt.wrapping_add(1).max(1);
                run_prepared(&mut s, &mut rng, next_stmt, &sql)
            } else if sql.trim().is_empty() {
                // The protocol answers 1065 itself.
                Vec::new()
            } else {
                fuzz::run_query(&mut s, &sql, multi)
            }
        }));
        let took = wd.end_precise();
        if took >= cfg.slow {
            findings.slow(&sql, took);
        }
        match r {
            Err(_) => {
                findings.crash(&sql, fuzz::take_panic());
                // As the server does: the connection goes; here the whole server too, so that
                // one bug does not cascade through poisoned state.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| drop(s)));
                rig = Rig::new("sql");
                rig.setup_schema();
                wd.set_server(&rig.server);
                (s, ctl) = open(&rig);
            }
            Ok(results) => {
                if dump {
                    let o: Vec<String> = results
                        .iter()
                        .map(|r| match r {
                            Ok(Response::Rows(rs)) => format!("rows:{}", rs.rows.len()),
                            Ok(Response::Ok(_)) => "ok".into(),
                            Err(e) => format!("E{} {}", e.code, e.message),
                        })
                        .collect();
                    println!("DUMP {}us {sql:?} => {}", took.as_micros(), o.join(" | "));
                }
                for r in &results {
                    findings.outcome(r);
                    let bad = match r {
                        Ok(resp) => fuzz::check_response(resp),
                        Err(e) => fuzz::check_error(e),
                    };
                    if let Err(what) = bad {
                        findings.violation(&sql, what);
                    }
                }
            }
        }
        // KILL CONNECTION of itself: the network layer would close the connection.
        let killed = rig
            .server
            .process(s.id())
            .is_none_or(|p| p.connection_killed());
        if ctl.0.load(Ordering::SeqCst) || killed {
            s.disconnect();
            (s, ctl) = open(&rig);
        }
        rss.sample(i + 1, cfg.iters);
    }
    s.disconnect();
    drop(s);
    fuzz::check_idle(&rig.server, "at the end", &mut findings);
    drop(wd);
    rss.finish();
    (cfg.iters, started.elapsed(), findings, rss)
}
