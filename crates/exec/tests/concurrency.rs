//! Concurrency through the API with real threads: lost update, deadlock, lock wait timeout,
//! KILL of a lock waiter.
mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{engine, rows, Ctx};

fn setup(tag: &str) -> (common::TempDir, Arc<shoal_exec::TableEngine>) {
    let (d, e) = engine(tag);
    let mut ts = e.session();
    let mut ctx = Ctx::default();
    ts.query(
        "CREATE TABLE acct (id INT NOT NULL, v BIGINT NOT NULL, PRIMARY KEY (id))",
        Some("test"),
        &mut ctx,
    )
    .expect("create");
    ts.query(
        "INSERT INTO acct VALUES (1, 0), (2, 0)",
        Some("test"),
        &mut ctx,
    )
    .expect("insert");
    (d, e)
}

#[test]
fn lost_update() {
    let (_d, eng) = setup("lost");
    let threads = 4;
    let per = 50;
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let eng = eng.clone();
            std::thread::spawn(move || {
                let mut ts = eng.session();
                let mut ctx = Ctx::default();
                let read = ts
                    .prepare("SELECT v FROM acct WHERE id = 1 FOR UPDATE", Some("test"))
                    .expect("prep");
                let write = ts
                    .prepare("UPDATE acct SET v = ? WHERE id = 1", Some("test"))
                    .expect("prep");
                let mut done = 0;
                while done < per {
                    ts.begin().expect("begin");
                    let r = ts.execute(&read, &[], &mut ctx).and_then(|out| {
                        let v: i64 = rows(&out)[0].parse().expect("int");
                        ts.execute(&write, &[shoal_sql::value::Value::Int(v + 1)], &mut ctx)
                    });
                    match r {
                        Ok(_) => {
                            ts.commit().expect("commit");
                            done += 1;
                        }
                        Err(e) if e.code() == 1213 || e.code() == 1205 => ts.rollback(),
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("thread");
    }
    let mut ts = eng.session();
    let out = ts
        .query(
            "SELECT v FROM acct WHERE id = 1",
            Some("test"),
            &mut Ctx::default(),
        )
        .expect("read");
    assert_eq!(rows(&out), vec![(threads * per).to_string()]);
}

#[test]
fn deadlock_one_victim_other_commits() {
    let (_d, eng) = setup("deadlock");
    let barrier = Arc::new(Barrier::new(2));
    let run = |first: i64, second: i64| {
        let eng = eng.clone();
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            let mut ts = eng.session();
            ts.set_lock_wait_timeout(Duration::from_secs(20));
            let mut ctx = Ctx::default();
            ts.begin().expect("begin");
            ts.query(
                &format!("UPDATE acct SET v = v + 1 WHERE id = {first}"),
                Some("test"),
                &mut ctx,
            )
            .expect("first lock");
            barrier.wait();
            let r = ts.query(
                &format!("UPDATE acct SET v = v + 10 WHERE id = {second}"),
                Some("test"),
                &mut ctx,
            );
            match r {
                Ok(_) => {
                    ts.commit().expect("commit");
                    None
                }
                Err(e) => {
                    // The victim's transaction is gone: the session is outside a transaction.
                    assert!(!ts.in_transaction());
                    Some(e.code())
                }
            }
        })
    };
    let a = run(1, 2);
    let b = run(2, 1);
    let ra = a.join().expect("a");
    let rb = b.join().expect("b");
    let errs: Vec<u16> = [ra, rb].into_iter().flatten().collect();
    assert_eq!(errs, vec![1213], "exactly one deadlock victim");
    let mut ts = eng.session();
    let out = ts
        .query(
            "SELECT v FROM acct ORDER BY id",
            Some("test"),
            &mut Ctx::default(),
        )
        .expect("read");
    // The winner's two updates (1 and 10) landed; the victim's first update was rolled back.
    let vals: Vec<i64> = rows(&out).iter().map(|r| r.parse().expect("int")).collect();
    assert_eq!(vals.iter().sum::<i64>(), 11);
}

#[test]
fn lock_wait_timeout_fails_only_the_statement() {
    let (_d, eng) = setup("timeout");
    let mut holder = eng.session();
    let mut ctx = Ctx::default();
    holder.begin().expect("begin");
    holder
        .query(
            "SELECT v FROM acct WHERE id = 1 FOR UPDATE",
            Some("test"),
            &mut ctx,
        )
        .expect("lock");

    let mut waiter = eng.session();
    waiter.set_lock_wait_timeout(Duration::from_millis(300));
    let mut wctx = Ctx::default();
    waiter.begin().expect("begin");
    waiter
        .query(
            "UPDATE acct SET v = 5 WHERE id = 2",
            Some("test"),
            &mut wctx,
        )
        .expect("own row");
    let t0 = Instant::now();
    let e = waiter
        .query(
            "UPDATE acct SET v = 7 WHERE id = 1",
            Some("test"),
            &mut wctx,
        )
        .expect_err("must time out");
    assert_eq!(e.code(), 1205);
    assert!(t0.elapsed() >= Duration::from_millis(250));
    // The transaction survives and keeps its earlier work.
    assert!(waiter.in_transaction());
    holder.rollback();
    waiter.commit().expect("commit");
    let out = waiter
        .query(
            "SELECT id, v FROM acct ORDER BY id",
            Some("test"),
            &mut wctx,
        )
        .expect("read");
    assert_eq!(rows(&out), vec!["1|0", "2|5"]);
}

#[test]
fn kill_interrupts_a_lock_waiter() {
    let (_d, eng) = setup("kill");
    let mut holder = eng.session();
    let mut ctx = Ctx::default();
    holder.begin().expect("begin");
    holder
        .query("UPDATE acct SET v = 1 WHERE id = 1", Some("test"), &mut ctx)
        .expect("lock");

    let mut waiter = eng.session();
    waiter.set_lock_wait_timeout(Duration::from_secs(30));
    let kill = waiter.kill_handle();
    let h = std::thread::spawn(move || {
        let t0 = Instant::now();
        let r = waiter.query(
            "UPDATE acct SET v = 9 WHERE id = 1",
            Some("test"),
            &mut Ctx::default(),
        );
        (r.map(|_| ()).map_err(|e| e.code()), t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    kill.kill();
    let (r, took) = h.join().expect("waiter");
    assert_eq!(r, Err(1317));
    assert!(
        took < Duration::from_secs(10),
        "interrupted promptly, took {took:?}"
    );
    holder.commit().expect("commit");
    let out = holder
        .query("SELECT v FROM acct WHERE id = 1", Some("test"), &mut ctx)
        .expect("read");
    assert_eq!(rows(&out), vec!["1"]);
}

/// `FOR UPDATE SKIP LOCKED` as a job queue: workers take the first job nobody holds, mark it
/// done and commit. Every job is done exactly once, and no take waits behind another worker's
/// job (the lock wait timeout is 30 s; a take must return well before). `NOWAIT` on a held row
/// fails at once with 1205; on a free one it reads; the policy lasts one statement.
#[test]
fn skip_locked_job_queue_and_nowait() {
    let (_d, eng) = engine("skiplocked");
    let mut ts = eng.session();
    let mut ctx = Ctx::default();
    let db = Some("test");
    ts.query(
        "CREATE TABLE jobs (id INT PRIMARY KEY, done INT NOT NULL, worker INT, KEY kd (done))",
        db,
        &mut ctx,
    )
    .expect("create");
    let n = 200;
    let values: Vec<String> = (1..=n).map(|i| format!("({i}, 0, NULL)")).collect();
    ts.query(
        &format!("INSERT INTO jobs VALUES {}", values.join(",")),
        db,
        &mut ctx,
    )
    .expect("insert");
    let workers = 4;
    let start = Arc::new(Barrier::new(workers));
    let hs: Vec<_> = (0..workers)
        .map(|w| {
            let (eng, start) = (eng.clone(), start.clone());
            std::thread::spawn(move || {
                let mut ts = eng.session();
                let mut ctx = Ctx::default();
                ts.set_lock_wait_timeout(Duration::from_secs(30));
                let take = ts
                    .prepare(
                        "SELECT id FROM jobs WHERE done = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                        Some("test"),
                    )
                    .expect("prep");
                let finish = ts
                    .prepare("UPDATE jobs SET done = done + 1, worker = ? WHERE id = ?", Some("test"))
                    .expect("prep");
                start.wait();
                let mut mine = 0;
                loop {
                    ts.begin().expect("begin");
                    let t0 = Instant::now();
                    let got = rows(&ts.execute(&take, &[], &mut ctx).expect("take"));
                    // Never blocked behind another worker's job.
                    assert!(t0.elapsed() < Duration::from_secs(10), "SKIP LOCKED waited");
                    let Some(id) = got.first() else {
                        ts.commit().expect("commit");
                        break;
                    };
                    let id: i64 = id.parse().expect("id");
                    let v = shoal_sql::value::Value::Int;
                    ts.execute(&finish, &[v(w as i64), v(id)], &mut ctx)
                        .expect("finish");
                    ts.commit().expect("commit");
                    mine += 1;
                }
                mine
            })
        })
        .collect();
    let total: usize = hs.into_iter().map(|h| h.join().expect("worker")).sum();
    assert_eq!(total, n);
    let out = ts
        .query(
            "SELECT COUNT(*), MIN(done), MAX(done) FROM jobs",
            db,
            &mut ctx,
        )
        .expect("count");
    assert_eq!(rows(&out), vec![format!("{n}|1|1")]);

    // NOWAIT: a held row fails at once, a free one is read.
    let mut holder = eng.session();
    holder.begin().expect("begin");
    holder
        .query("SELECT id FROM jobs WHERE id = 1 FOR UPDATE", db, &mut ctx)
        .expect("hold");
    ts.set_lock_wait_timeout(Duration::from_secs(30));
    ts.begin().expect("begin");
    let t0 = Instant::now();
    let e = ts
        .query(
            "SELECT id FROM jobs WHERE id = 1 FOR UPDATE NOWAIT",
            db,
            &mut ctx,
        )
        .expect_err("held");
    assert_eq!(e.code(), 1205);
    assert!(t0.elapsed() < Duration::from_secs(10), "NOWAIT waited");
    let out = ts
        .query(
            "SELECT id FROM jobs WHERE id = 2 FOR UPDATE NOWAIT",
            db,
            &mut ctx,
        )
        .expect("free row");
    assert_eq!(rows(&out), vec!["2".to_string()]);
    // The next plain locking read of the same transaction waits again (the policy was the
    // statement's): it times out after the wait.
    ts.set_lock_wait_timeout(Duration::from_millis(300));
    let t0 = Instant::now();
    let e = ts
        .query("SELECT id FROM jobs WHERE id = 1 FOR UPDATE", db, &mut ctx)
        .expect_err("held");
    assert_eq!(e.code(), 1205);
    assert!(
        t0.elapsed() >= Duration::from_millis(250),
        "a plain FOR UPDATE did not wait"
    );
    ts.rollback();
    holder.rollback();
}

/// Read intents are taken without the lock manager's mutex (a table's counters); DDL's
/// exclusive lock still waits for another session's open read transaction, and does not wait
/// for its own session's reads earlier in the same transaction.
#[test]
fn ddl_waits_for_other_readers_not_its_own() {
    let (_d, eng) = setup("ddl_readers");
    let mut ctx = Ctx::default();
    let mut reader = eng.session();
    reader.begin().expect("begin");
    let out = reader
        .query("SELECT v FROM acct WHERE id = 1", Some("test"), &mut ctx)
        .expect("select");
    assert_eq!(rows(&out), vec!["0".to_string()]);
    let mut ddl = eng.session();
    ddl.set_table_lock_timeout(Duration::from_millis(300));
    let e = ddl
        .query("CREATE INDEX iv ON acct (v)", Some("test"), &mut ctx)
        .expect_err("the reader's transaction is open");
    assert_eq!(e.code(), 1205, "{e}");
    reader.commit().expect("commit");
    // The DDL session reads the table in its own transaction, then changes it.
    ddl.begin().expect("begin");
    ddl.query("SELECT v FROM acct WHERE id = 2", Some("test"), &mut ctx)
        .expect("select");
    ddl.query("CREATE INDEX iv ON acct (v)", Some("test"), &mut ctx)
        .expect("its own read does not block its DDL");
    // And the index serves a read afterwards, with every row in it.
    let out = reader
        .query(
            "SELECT COUNT(*) FROM acct WHERE v = 0",
            Some("test"),
            &mut ctx,
        )
        .expect("count");
    assert_eq!(rows(&out), vec!["2".to_string()]);
}
