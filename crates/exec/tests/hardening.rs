//! Table statements cannot crash the server with deep expressions, and the evaluator's
//! warnings reach the session's context through `RowCtx`.

mod common;

use common::{engine, rows, run, Ctx};
use shoal_exec::ExecOutput;

/// Runs `f` on a thread with a pool worker's 2 MiB stack (an overflow aborts the test binary).
fn on_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn outcome(r: Result<ExecOutput, shoal_sql::SqlError>) -> String {
    match r {
        Ok(o @ ExecOutput::Rows { .. }) => rows(&o).join(","),
        Ok(_) => "ok".into(),
        Err(e) => format!("ERR {}", e.code()),
    }
}

#[test]
fn long_operator_chains_in_table_statements_answer_or_fail_with_1436() {
    let got = on_worker_stack(|| {
        let (_dir, eng) = engine("depth");
        let mut ts = eng.session();
        let mut ctx = Ctx::default();
        let mut q = |sql: String| outcome(run(&mut ts, &mut ctx, &sql));
        let mut got = vec![
            q("CREATE TABLE t (a INT PRIMARY KEY, b BIGINT)".into()),
            q("INSERT INTO t VALUES (1, 0)".into()),
        ];
        let or = |n: usize| format!("SELECT a FROM t WHERE {}a = 1", "a = 0 OR ".repeat(n - 1));
        for n in [1_000, 10_000, 100_000] {
            got.push(q(or(n)));
        }
        for n in [1_000, 100_000] {
            got.push(q(format!(
                "UPDATE t SET b = 0{} WHERE a = 1",
                "+1".repeat(n)
            )));
        }
        got.push(q("SELECT b FROM t".into()));
        got.push(q(format!(
            "INSERT INTO t VALUES (2, 1{})",
            "+1".repeat(100_000)
        )));
        got.push(q(format!(
            "SELECT a FROM t WHERE b = 1{} +",
            "+1".repeat(3_000)
        )));
        got
    });
    assert_eq!(
        got,
        [
            "ok", "ok", "1", "ERR 1436", "ERR 1436", "ok", "ERR 1436", "1000", "ERR 1436",
            "ERR 1064"
        ]
    );
}

#[test]
fn string_results_over_max_allowed_packet_warn_through_row_contexts() {
    let (_dir, eng) = engine("packet");
    let mut ts = eng.session();
    let mut ctx = Ctx::default();
    for sql in [
        "CREATE TABLE p (a INT PRIMARY KEY, s VARCHAR(10))",
        "INSERT INTO p VALUES (1, 'ab')",
    ] {
        run(&mut ts, &mut ctx, sql).unwrap();
    }
    // The test context does not know @@max_allowed_packet: shoal's default, 64 MiB.
    let out = run(&mut ts, &mut ctx, "SELECT REPEAT(s, 33554433) FROM p").unwrap();
    assert_eq!(rows(&out), ["NULL"]);
    assert_eq!(
        ctx.warnings,
        [(
            1301,
            "Result of repeat() was larger than max_allowed_packet (67108864) - truncated".into()
        )]
    );
}
