//! Crash recovery: a child process (this test binary re-executed) writes with
//! `innodb_flush_log_at_trx_commit = 1` and prints every acknowledged commit; the parent
//! `kill -9`s it at a random moment, reopens the data directory, and checks that every
//! acknowledged commit is present, nothing else changed (except possibly the one in-flight
//! commit), and every secondary index agrees with its table. Repeated several times on the same
//! data directory.

mod common;
use common::*;
use rand::{Rng, SeedableRng};
use shoal_store::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ENV: &str = "SHOAL_STORE_CRASH_DIR";

/// The child: runs only when re-executed by `kill_9_during_writes_loses_no_acknowledged_commit`.
#[test]
#[ignore = "child process of the crash test"]
fn crash_child() {
    let Ok(dir) = std::env::var(ENV) else { return };
    let e = Engine::open(config(std::path::Path::new(&dir))).unwrap();
    if !e.database_exists("db") {
        e.create_database("db").unwrap();
    }
    let t = match e.table("db", "t") {
        Ok(t) => t,
        Err(_) => e.create_table("db", sbtest_spec("t", true)).unwrap(),
    };
    let mut ids: Vec<i64> = {
        let mut txn = e.begin(Isolation::RepeatableRead);
        let rows = txn
            .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
            .unwrap();
        rows.iter()
            .map(|r| match r.values[0] {
                Datum::Int(v) => v,
                _ => panic!(),
            })
            .collect()
    };
    let mut rng = rand::rngs::StdRng::from_entropy();
    let out = std::io::stdout();
    loop {
        let mut txn = e.begin(Isolation::RepeatableRead);
        let k: i64 = rng.gen_range(0..1000);
        let p: u32 = rng.gen_range(0..100);
        let (op, id) = if ids.is_empty() || p < 60 {
            let auto = e.next_auto_increment(&t, 1).unwrap() as i64;
            txn.insert(&t, row(auto, k, &format!("c{auto}-{k}")))
                .unwrap();
            ids.push(auto);
            ("I", auto)
        } else if p < 90 {
            let id = ids[rng.gen_range(0..ids.len())];
            let key = RowKey::from_values(&t, &[Datum::Int(id)]).unwrap();
            assert!(txn
                .update(&t, &key, row(id, k, &format!("c{id}-{k}")))
                .unwrap());
            ("U", id)
        } else {
            let i = rng.gen_range(0..ids.len());
            let id = ids.swap_remove(i);
            assert!(txn
                .delete(&t, &RowKey::from_values(&t, &[Datum::Int(id)]).unwrap())
                .unwrap());
            ("D", id)
        };
        {
            let mut o = out.lock();
            writeln!(o, "BEGIN {op} {id} {k}").unwrap();
            o.flush().unwrap();
        }
        txn.commit().unwrap();
        let mut o = out.lock();
        writeln!(o, "ACK {op} {id} {k}").unwrap();
        o.flush().unwrap();
    }
}

fn apply(model: &mut HashMap<i64, i64>, op: &str, id: i64, k: i64) {
    match op {
        "D" => {
            model.remove(&id);
        }
        _ => {
            model.insert(id, k);
        }
    }
}

#[test]
fn kill_9_during_writes_loses_no_acknowledged_commit() {
    let dir = TempDir::new("crash");
    let exe = std::env::current_exe().unwrap();
    let mut model: HashMap<i64, i64> = HashMap::new();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut total_acks = 0;
    for round in 0..5 {
        let mut child = Command::new(&exe)
            .args([
                "crash_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let lines = lines.clone();
            let stdout = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for l in BufReader::new(stdout).lines() {
                    let Ok(l) = l else { break };
                    lines.lock().unwrap().push(l);
                }
            })
        };
        // Wait until the child is writing, then let it run a random while.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !lines.lock().unwrap().iter().any(|l| l.starts_with("ACK")) {
            assert!(
                std::time::Instant::now() < deadline,
                "child never acknowledged a commit"
            );
            assert!(child.try_wait().unwrap().is_none(), "child exited early");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(100..700)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();

        let lines = lines.lock().unwrap().clone();
        let mut pending: Option<(String, i64, i64)> = None;
        let mut acks = 0;
        for l in &lines {
            let parts: Vec<&str> = l.split_whitespace().collect();
            if parts.len() != 4 {
                continue;
            }
            let (op, id, k) = (
                parts[1].to_string(),
                parts[2].parse().unwrap(),
                parts[3].parse().unwrap(),
            );
            match parts[0] {
                "BEGIN" => pending = Some((op, id, k)),
                "ACK" => {
                    apply(&mut model, &op, id, k);
                    pending = None;
                    acks += 1;
                }
                _ => {}
            }
        }
        total_acks += acks;

        let e = open(dir.path());
        let t = e.table("db", "t").unwrap();
        let mut txn = e.begin(Isolation::RepeatableRead);
        let rows = txn
            .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
            .unwrap();
        let mut db: HashMap<i64, i64> = HashMap::new();
        for r in &rows {
            let (Datum::Int(id), Datum::Int(k)) = (&r.values[0], &r.values[1]) else {
                panic!()
            };
            assert_eq!(
                r.values[2],
                Datum::text(&format!("c{id}-{k}")),
                "row is internally consistent"
            );
            db.insert(*id, *k);
        }
        // The in-flight commit may or may not have made it; adopt what the database says.
        if let Some((op, id, k)) = &pending {
            let mut with = model.clone();
            apply(&mut with, op, *id, *k);
            if db == with {
                model = with;
            }
        }
        assert_eq!(
            db, model,
            "round {round}: database differs from acknowledged commits ({acks} acks)"
        );
        drop(txn);
        check_indexes(&e, &t);
        // AUTO_INCREMENT never goes back to a used value.
        let max_id = model.keys().copied().max().unwrap_or(0);
        assert!(e.peek_auto_increment(&t).unwrap() as i64 > max_id);
    }
    assert!(total_acks > 20, "too few commits exercised: {total_acks}");
    eprintln!("crash test: {total_acks} acknowledged commits over 5 kills");
}
