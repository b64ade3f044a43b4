//! Locking under real threads: lost updates, deadlocks, lock wait timeouts, FIFO order, locks
//! freed on drop, unique-key races, KILL, and group commit.

mod common;
use common::*;
use shoal_store::*;
use shoal_wait::WaitKind;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

fn setup(tag: &str) -> (TempDir, Engine, Arc<TableDef>) {
    let dir = TempDir::new(tag);
    let e = open(dir.path());
    e.create_database("db").unwrap();
    let t = e.create_table("db", sbtest_spec("t", true)).unwrap();
    (dir, e, t)
}

fn key(t: &TableDef, id: i64) -> RowKey {
    RowKey::from_values(t, &[Datum::Int(id)]).unwrap()
}

#[test]
fn no_lost_updates_under_exclusive_locks() {
    let (_d, e, t) = setup("lost");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "counter")).unwrap();
    txn.commit().unwrap();
    let threads = 8;
    let per = 50;
    let waits_before = shoal_wait::count(WaitKind::RowLock);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (e, t) = (e.clone(), t.clone());
            thread::spawn(move || {
                for _ in 0..per {
                    let mut txn = e.begin(Isolation::RepeatableRead);
                    let r = txn
                        .get(&t, &[Datum::Int(1)], LockMode::Exclusive)
                        .unwrap()
                        .unwrap();
                    let Datum::Int(k) = r.values[1] else { panic!() };
                    // Widen the read-modify-write window so that the threads really collide.
                    thread::sleep(Duration::from_micros(200));
                    let mut v = r.values.clone();
                    v[1] = Datum::Int(k + 1);
                    txn.update(&t, &r.key, v).unwrap();
                    txn.commit().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut r = e.begin(Isolation::RepeatableRead);
    assert_eq!(
        r.get(&t, &[Datum::Int(1)], LockMode::None)
            .unwrap()
            .unwrap()
            .values[1],
        Datum::Int(threads * per)
    );
    // Contention really happened and was reported.
    assert!(e.status_value("Innodb_row_lock_waits").unwrap() > 0);
    assert!(shoal_wait::count(WaitKind::RowLock) > waits_before);
    assert_eq!(e.status_value("Innodb_row_lock_current_waits").unwrap(), 0);
}

#[test]
fn crossing_transactions_one_deadlock_victim_other_commits() {
    let (_d, e, t) = setup("deadlock");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.insert(&t, row(2, 0, "b")).unwrap();
    txn.commit().unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let run = |first: i64, second: i64| {
        let (e, t, barrier) = (e.clone(), t.clone(), barrier.clone());
        thread::spawn(move || {
            let mut txn = e.begin(Isolation::RepeatableRead);
            txn.set_lock_wait_timeout(Duration::from_secs(20));
            txn.update(
                &t,
                &key(&t, first),
                row(first, 1, if first == 1 { "a" } else { "b" }),
            )
            .unwrap();
            barrier.wait();
            match txn.update(
                &t,
                &key(&t, second),
                row(second, 2, if second == 1 { "a" } else { "b" }),
            ) {
                Ok(_) => {
                    txn.commit().unwrap();
                    Ok(())
                }
                Err(err) => {
                    assert!(!txn.is_active(), "victim rolled back");
                    Err(err)
                }
            }
        })
    };
    let a = run(1, 2);
    let b = run(2, 1);
    let results = [a.join().unwrap(), b.join().unwrap()];
    let deadlocks = results
        .iter()
        .filter(|r| matches!(r, Err(StoreError::Deadlock)))
        .count();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!((deadlocks, ok), (1, 1), "{results:?}");
    let err = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!((err.mysql_code(), err.sqlstate()), (1213, "40001"));
    assert_eq!(e.status_value("Innodb_deadlocks").unwrap(), 1);
    // The winner's writes are both there.
    let mut r = e.begin(Isolation::RepeatableRead);
    let ks: Vec<Datum> = r
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap()
        .into_iter()
        .map(|x| x.values[1].clone())
        .collect();
    assert!(
        ks == vec![Datum::Int(1), Datum::Int(2)] || ks == vec![Datum::Int(2), Datum::Int(1)],
        "{ks:?}"
    );
}

#[test]
fn deadlock_detection_off_means_both_wait_and_time_out() {
    let (_d, e, t) = setup("nodetect");
    assert!(e.deadlock_detect());
    e.set_deadlock_detect(false);
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.insert(&t, row(2, 0, "b")).unwrap();
    txn.commit().unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let run = |first: i64, second: i64| {
        let (e, t, barrier, done) = (e.clone(), t.clone(), barrier.clone(), done.clone());
        thread::spawn(move || {
            let mut txn = e.begin(Isolation::RepeatableRead);
            txn.set_lock_wait_timeout(Duration::from_millis(600));
            // Distinct unique `c` values: only the rows are contended for.
            txn.update(&t, &key(&t, first), row(first, 1, &format!("x{first}")))
                .unwrap();
            barrier.wait();
            let t0 = Instant::now();
            let r = txn.update(&t, &key(&t, second), row(second, 2, &format!("y{second}")));
            let waited = t0.elapsed();
            // A timeout fails only the statement: the transaction stays open (and keeps its
            // lock until the other one has given up too).
            let active = txn.is_active();
            done.wait();
            txn.rollback();
            (r.map(|_| ()), waited, active)
        })
    };
    let a = run(1, 2);
    let b = run(2, 1);
    let results = [a.join().unwrap(), b.join().unwrap()];
    for (r, waited, active) in &results {
        let err = r.as_ref().expect_err("each waits for the other");
        assert!(matches!(err, StoreError::LockWaitTimeout), "{results:?}");
        assert_eq!(err.mysql_code(), 1205);
        assert!(*waited >= Duration::from_millis(500), "{waited:?}");
        assert!(*active);
    }
    assert_eq!(e.status_value("Innodb_deadlocks").unwrap(), 0);
    e.set_deadlock_detect(true);
    assert!(e.deadlock_detect());
}

#[test]
fn lock_wait_timeout_fails_only_the_statement() {
    let (_d, e, t) = setup("timeout");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.insert(&t, row(2, 0, "b")).unwrap();
    txn.commit().unwrap();
    let mut holder = e.begin(Isolation::RepeatableRead);
    holder
        .get(&t, &[Datum::Int(1)], LockMode::Exclusive)
        .unwrap();
    let mut waiter = e.begin(Isolation::RepeatableRead);
    waiter.set_lock_wait_timeout(Duration::from_millis(300));
    waiter.update(&t, &key(&t, 2), row(2, 5, "b")).unwrap();
    let start = Instant::now();
    let err = waiter
        .get(&t, &[Datum::Int(1)], LockMode::Shared)
        .unwrap_err();
    let waited = start.elapsed();
    assert!(matches!(err, StoreError::LockWaitTimeout));
    assert_eq!((err.mysql_code(), err.sqlstate()), (1205, "HY000"));
    assert!(
        waited >= Duration::from_millis(290) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // The transaction is still active and keeps its earlier write.
    assert!(waiter.is_active());
    waiter.commit().unwrap();
    holder.commit().unwrap();
    let mut r = e.begin(Isolation::RepeatableRead);
    assert_eq!(
        r.get(&t, &[Datum::Int(2)], LockMode::None)
            .unwrap()
            .unwrap()
            .values[1],
        Datum::Int(5)
    );
    assert!(e.status_value("Innodb_row_lock_time").unwrap() >= 290);
    assert!(e.status_value("Innodb_row_lock_time_max").unwrap() >= 290);
}

#[test]
fn waiters_are_granted_in_fifo_order() {
    let (_d, e, t) = setup("fifo");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.commit().unwrap();
    let mut holder = e.begin(Isolation::RepeatableRead);
    holder
        .get(&t, &[Datum::Int(1)], LockMode::Exclusive)
        .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for i in 0..5 {
        let (e2, t, order) = (e.clone(), t.clone(), order.clone());
        handles.push(thread::spawn(move || {
            let mut txn = e2.begin(Isolation::RepeatableRead);
            // Alternate shared and exclusive requests: strict FIFO must still hold.
            let mode = if i % 2 == 0 {
                LockMode::Exclusive
            } else {
                LockMode::Shared
            };
            txn.get(&t, &[Datum::Int(1)], mode).unwrap();
            order.lock().unwrap().push(i);
            thread::sleep(Duration::from_millis(30));
            txn.commit().unwrap();
        }));
        // Make sure waiter i is queued before waiter i+1.
        let deadline = Instant::now() + Duration::from_secs(5);
        while e.status_value("Innodb_row_lock_current_waits").unwrap() < i as u64 + 1 {
            assert!(Instant::now() < deadline, "waiter {i} never queued");
            thread::sleep(Duration::from_millis(2));
        }
    }
    holder.commit().unwrap();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn dropping_or_killing_a_transaction_frees_its_locks() {
    let (_d, e, t) = setup("drop");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.commit().unwrap();
    let mut holder = e.begin(Isolation::RepeatableRead);
    holder.update(&t, &key(&t, 1), row(1, 99, "a")).unwrap();
    let e2 = e.clone();
    let t2 = t.clone();
    let waiter = thread::spawn(move || {
        let mut w = e2.begin(Isolation::RepeatableRead);
        let r = w
            .get(&t2, &[Datum::Int(1)], LockMode::Exclusive)
            .unwrap()
            .unwrap();
        r.values[1].clone()
    });
    thread::sleep(Duration::from_millis(100));
    drop(holder); // client gone: rolled back, locks released
    assert_eq!(
        waiter.join().unwrap(),
        Datum::Int(0),
        "waiter sees the rolled-back state"
    );
    assert_eq!(
        e.status()
            .iter()
            .find(|(n, _)| *n == "Shoal_row_lock_keys")
            .unwrap()
            .1,
        0
    );

    // KILL interrupts a lock wait.
    let mut holder = e.begin(Isolation::RepeatableRead);
    holder
        .get(&t, &[Datum::Int(1)], LockMode::Exclusive)
        .unwrap();
    let mut victim = e.begin(Isolation::RepeatableRead);
    let kill = victim.kill_handle();
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        kill.kill();
    });
    let start = Instant::now();
    let err = victim
        .get(&t, &[Datum::Int(1)], LockMode::Shared)
        .unwrap_err();
    assert!(matches!(err, StoreError::Interrupted), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
    killer.join().unwrap();
    // The next statement works again (KILL QUERY semantics).
    holder.commit().unwrap();
    assert!(victim
        .get(&t, &[Datum::Int(1)], LockMode::Shared)
        .unwrap()
        .is_some());
}

#[test]
fn concurrent_inserts_of_one_unique_value_admit_exactly_one() {
    let (_d, e, t) = setup("uniq");
    let n = 6;
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (e, t, barrier) = (e.clone(), t.clone(), barrier.clone());
            thread::spawn(move || {
                let mut txn = e.begin(Isolation::RepeatableRead);
                barrier.wait();
                // Distinct primary keys, same UNIQUE value.
                let r = txn.insert(&t, row(100 + i as i64, 1, "same"));
                thread::sleep(Duration::from_millis(20));
                match r {
                    Ok(_) => txn.commit().map(|_| true),
                    Err(err) => Err(err),
                }
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    for r in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(r.to_string(), "Duplicate entry 'same' for key 'u_c'");
    }
    check_indexes(&e, &t);
}

#[test]
fn group_commit_shares_fsyncs() {
    let (_d, e, t) = setup("group");
    assert_eq!(e.flush_log_at_trx_commit(), 1);
    let threads = 16;
    let per = 40;
    let fsyncs_before = e.status_value("Innodb_data_fsyncs").unwrap();
    let commits_before = e.status_value("Shoal_store_write_commits").unwrap();
    let gc_waits_before = shoal_wait::count(WaitKind::GroupCommit);
    let sync_waits_before = shoal_wait::count(WaitKind::Sync);
    let handles: Vec<_> = (0..threads)
        .map(|th| {
            let (e, t) = (e.clone(), t.clone());
            thread::spawn(move || {
                for i in 0..per {
                    let mut txn = e.begin(Isolation::RepeatableRead);
                    let id = (th * 1000 + i + 1) as i64;
                    txn.insert(&t, row(id, id, &format!("c{id}"))).unwrap();
                    txn.commit().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let commits = e.status_value("Shoal_store_write_commits").unwrap() - commits_before;
    let fsyncs = e.status_value("Innodb_data_fsyncs").unwrap() - fsyncs_before;
    assert_eq!(commits, (threads * per) as u64);
    // AUTO_INCREMENT reservations also sync; they are rare (one per 1024 values).
    assert!(fsyncs < commits, "fsyncs {fsyncs} commits {commits}");
    assert!(shoal_wait::count(WaitKind::GroupCommit) > gc_waits_before);
    assert!(shoal_wait::count(WaitKind::Sync) > sync_waits_before);
    let mut r = e.begin(Isolation::RepeatableRead);
    assert_eq!(
        r.scan_pk(&t, &KeyRange::all(), LockMode::None, None)
            .unwrap()
            .len(),
        threads * per
    );
    eprintln!("group commit: {commits} commits, {fsyncs} fsyncs");
}

/// Group commit's targeted wake-ups under churn: every committer waits on its own condition
/// variable and is woken only for its own news, so a lost wake-up would leave a committer
/// asleep for good. A before-sync hook holds each leader a little, so that the next group's
/// committers queue behind it and one of them must be woken to lead. Every committer must
/// finish (a watchdog fails the test instead of hanging), every row must be there, and the
/// groups must have been shared.
#[test]
fn group_commit_wakes_every_committer_under_churn() {
    let (_d, e, t) = setup("churn");
    e.set_before_sync_hook(Some(Arc::new(|| {
        thread::sleep(Duration::from_micros(300));
    })));
    let threads = 24;
    let per = 150;
    let groups_before = e.status_value("Shoal_store_commit_groups").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for th in 0..threads {
        let (e, t, tx) = (e.clone(), t.clone(), tx.clone());
        thread::spawn(move || {
            for i in 0..per {
                let mut txn = e.begin(Isolation::RepeatableRead);
                let id = (th * 10_000 + i + 1) as i64;
                txn.insert(&t, row(id, id, &format!("c{id}"))).unwrap();
                // One in four also locks a hot row: its lock is handed over between groups.
                if i % 4 == 0 {
                    let _ = txn.get(&t, &[Datum::Int(1)], LockMode::Exclusive);
                }
                txn.commit().unwrap();
            }
            tx.send(th).unwrap();
        });
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut done = 0;
    while done < threads {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(_) => done += 1,
            Err(e) => panic!("{done} of {threads} committers finished, then {e:?}: a lost wake-up"),
        }
    }
    e.set_before_sync_hook(None);
    let groups = e.status_value("Shoal_store_commit_groups").unwrap() - groups_before;
    let commits = (threads * per) as u64;
    assert!(groups * 2 < commits, "groups {groups} commits {commits}");
    assert_eq!(row_count(&e, &t), threads * per);
}

/// The committers queued behind a group are led by one of them when that group's leader is
/// done, even if nobody commits afterwards: the leader wakes the first of them. A leader is
/// held in the before-sync hook until two more committers wait behind it, then released, and
/// its thread commits nothing more; both must finish.
#[test]
fn group_commit_wakes_the_next_groups_leader() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_d, e, t) = setup("next-leader");
    let (in_hook_tx, in_hook) = std::sync::mpsc::channel::<()>();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let first = AtomicBool::new(true);
    let in_hook_tx = Mutex::new(in_hook_tx);
    e.set_before_sync_hook(Some(Arc::new(move || {
        if first.swap(false, Ordering::SeqCst) {
            in_hook_tx.lock().unwrap().send(()).unwrap();
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(60));
        }
    })));
    let commit = |id: i64| {
        let (e, t) = (e.clone(), t.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut txn = e.begin(Isolation::RepeatableRead);
            txn.insert(&t, row(id, id, &format!("c{id}"))).unwrap();
            tx.send(txn.commit()).unwrap();
        });
        rx
    };
    let leader = commit(1);
    in_hook
        .recv_timeout(Duration::from_secs(60))
        .expect("the leader reaches the hook");
    let waits = shoal_wait::count(WaitKind::GroupCommit);
    let queued: Vec<_> = [2, 3].into_iter().map(commit).collect();
    // Both wait behind the held leader (their GroupCommit waits; other tests' commits may
    // count here too, which at worst lets the leader go early and the test pass trivially).
    await_group_commit_waits(waits, 2);
    go.send(()).unwrap();
    leader
        .recv_timeout(Duration::from_secs(60))
        .expect("the leader returns")
        .unwrap();
    for (i, rx) in queued.into_iter().enumerate() {
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("queued committer {i} was never woken"))
            .unwrap();
    }
    e.set_before_sync_hook(None);
    assert_eq!(row_count(&e, &t), 3);
}

/// A follower's row locks are released by its group's leader once the batch is written,
/// before the sync, without the follower running. The first group (A alone) is held in the
/// before-sync hook while B and C queue; released, it hands over to B, which leads B and C
/// and is held in the hook in turn. While it is held, D gets the row C updated, and neither
/// B nor C has returned.
#[test]
fn a_followers_row_locks_are_released_by_its_leader() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (_d, e, t) = setup("follower-release");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(100, 1, "hot")).unwrap();
    txn.commit().unwrap();
    let (in_hook_tx, in_hook) = std::sync::mpsc::channel::<usize>();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let (in_hook_tx, go_rx) = (Mutex::new(in_hook_tx), Mutex::new(go_rx));
    let calls = AtomicUsize::new(0);
    e.set_before_sync_hook(Some(Arc::new(move || {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= 2 {
            in_hook_tx.lock().unwrap().send(n).unwrap();
            let _ = go_rx.lock().unwrap().recv_timeout(Duration::from_secs(60));
        }
    })));
    let spawn_commit = |f: Box<dyn FnOnce(&mut Transaction) + Send>| {
        let e = e.clone();
        let (done_tx, done) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut txn = e.begin(Isolation::RepeatableRead);
            f(&mut txn);
            done_tx.send(txn.commit()).unwrap();
        });
        done
    };
    let t1 = t.clone();
    let a = spawn_commit(Box::new(move |x| {
        x.insert(&t1, row(1, 1, "a")).unwrap();
    }));
    assert_eq!(in_hook.recv_timeout(Duration::from_secs(60)), Ok(1));
    let waits = shoal_wait::count(WaitKind::GroupCommit);
    let t2 = t.clone();
    let b = spawn_commit(Box::new(move |x| {
        x.insert(&t2, row(2, 2, "b")).unwrap();
    }));
    await_group_commit_waits(waits, 1);
    let t3 = t.clone();
    let c = spawn_commit(Box::new(move |x| {
        assert!(x.update(&t3, &key(&t3, 100), row(100, 3, "c")).unwrap());
    }));
    await_group_commit_waits(waits, 2);
    go.send(()).unwrap();
    a.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    assert_eq!(
        in_hook.recv_timeout(Duration::from_secs(60)),
        Ok(2),
        "B leads the next group"
    );
    // C's row is free while B's group is before its sync.
    let (e4, t4) = (e.clone(), t.clone());
    let d = thread::spawn(move || {
        let mut s = e4.begin(Isolation::RepeatableRead);
        let got = s.update(&t4, &key(&t4, 100), row(100, 4, "d")).unwrap();
        (s, got)
    });
    await_finished(
        &d,
        "the follower's row stayed locked until its group's sync",
    );
    assert!(
        b.try_recv().is_err() && c.try_recv().is_err(),
        "returned before the sync"
    );
    let (mut s, got) = d.join().unwrap();
    assert!(got);
    go.send(()).unwrap();
    b.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    c.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    e.set_before_sync_hook(None);
    s.commit().unwrap();
}

/// A committing transaction releases its row locks once its batch is written, before the
/// WAL sync: while a group is held between the two (the before-sync hook), the transaction
/// waiting for the committed row gets it and updates it, and the first commit returns only
/// after the sync. Both updates are there at the end.
#[test]
fn row_locks_are_released_before_the_commit_sync() {
    let (_d, e, t) = setup("early-release");
    assert_eq!(e.flush_log_at_trx_commit(), 1);
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 10, "start")).unwrap();
    txn.commit().unwrap();

    // The hook tells the test that a group is between write and sync, then waits for leave.
    let (in_sync_tx, in_sync) = std::sync::mpsc::channel::<()>();
    let (leave, leave_rx) = std::sync::mpsc::channel::<()>();
    let in_sync_tx = Mutex::new(in_sync_tx);
    let leave_rx = Mutex::new(leave_rx);
    e.set_before_sync_hook(Some(Arc::new(move || {
        let _ = in_sync_tx.lock().unwrap().send(());
        let _ = leave_rx
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(60));
    })));

    let mut first = e.begin(Isolation::RepeatableRead);
    assert!(first.update(&t, &key(&t, 1), row(1, 11, "first")).unwrap());
    let (e2, t2) = (e.clone(), t.clone());
    let second = thread::spawn(move || {
        let mut s = e2.begin(Isolation::RepeatableRead);
        // Waits for `first`'s lock.
        let updated = s.update(&t2, &key(&t2, 1), row(1, 12, "second")).unwrap();
        (s, updated, Instant::now())
    });
    let committer = thread::spawn(move || {
        first.commit().unwrap();
        Instant::now()
    });
    in_sync
        .recv_timeout(Duration::from_secs(60))
        .expect("the first commit reached the sync");
    // The row lock is free while the first group has not synced: the second update finishes.
    await_finished(
        &second,
        "the waiting update did not get the row while the commit was before its sync",
    );
    assert!(
        !committer.is_finished(),
        "the first commit returned before its sync"
    );
    let (mut s, updated, got_at) = second.join().unwrap();
    assert!(updated);
    e.set_before_sync_hook(None);
    leave.send(()).unwrap();
    let committed_at = committer.join().unwrap();
    assert!(got_at < committed_at);
    s.commit().unwrap();
    let mut r = e.begin(Isolation::RepeatableRead);
    let rows = r
        .scan_pk(&t, &KeyRange::all(), LockMode::None, None)
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].values, row(1, 12, "second"));
}

#[test]
fn locking_index_scan_rereads_and_skips_rows_that_moved() {
    let (_d, e, t) = setup("moved");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 5, "a")).unwrap();
    txn.insert(&t, row(2, 5, "b")).unwrap();
    txn.commit().unwrap();
    // Writer moves row 1 from k=5 to k=6 and holds its lock for a while.
    let mut w = e.begin(Isolation::RepeatableRead);
    assert!(w.update(&t, &key(&t, 1), row(1, 6, "a")).unwrap());
    let (e2, t2) = (e.clone(), t.clone());
    let scanner = thread::spawn(move || {
        let mut s = e2.begin(Isolation::RepeatableRead);
        let rows = s
            .scan_index(
                &t2,
                "k_1",
                &KeyRange::prefix(vec![Datum::Int(5)]),
                LockMode::Exclusive,
                None,
            )
            .unwrap();
        rows.into_iter()
            .map(|r| r.values[0].clone())
            .collect::<Vec<_>>()
    });
    thread::sleep(Duration::from_millis(100));
    w.commit().unwrap();
    // Row 1 no longer has k=5 after the lock wait: only row 2 is returned.
    assert_eq!(scanner.join().unwrap(), vec![Datum::Int(2)]);
}

#[test]
fn serializable_plain_reads_take_shared_locks() {
    let (_d, e, t) = setup("serial");
    let mut txn = e.begin(Isolation::RepeatableRead);
    txn.insert(&t, row(1, 0, "a")).unwrap();
    txn.commit().unwrap();
    let mut reader = e.begin(Isolation::Serializable);
    reader
        .get(&t, &[Datum::Int(1)], LockMode::None)
        .unwrap()
        .unwrap();
    assert_eq!(reader.locks_held(), 1);
    let mut writer = e.begin(Isolation::RepeatableRead);
    writer.set_lock_wait_timeout(Duration::from_millis(100));
    assert!(matches!(
        writer.update(&t, &key(&t, 1), row(1, 1, "a")),
        Err(StoreError::LockWaitTimeout)
    ));
    reader.commit().unwrap();
    assert!(writer.update(&t, &key(&t, 1), row(1, 1, "a")).unwrap());
    writer.commit().unwrap();
}

/// Rows of `t` visible to a fresh transaction.
fn row_count(e: &Engine, t: &TableDef) -> usize {
    e.begin(Isolation::RepeatableRead)
        .scan_pk(t, &KeyRange::all(), LockMode::None, None)
        .unwrap()
        .len()
}

/// Waits (30 s at most) until `n` group-commit waits were reported since the count was
/// `since`. Other tests' commits count too, which can only end the wait early.
fn await_group_commit_waits(since: u64, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while shoal_wait::count(WaitKind::GroupCommit) < since + n && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
}

/// Waits (30 s at most) for thread `h` to finish; fails with `stuck` otherwise.
fn await_finished<T>(h: &thread::JoinHandle<T>, stuck: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !h.is_finished() {
        assert!(Instant::now() < deadline, "{stuck}");
        thread::sleep(Duration::from_millis(10));
    }
}
