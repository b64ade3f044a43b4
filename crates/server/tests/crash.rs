//! Crash cycles against the real `shoal` binary: `kill -9`, and a simulated power loss. No
//! acknowledged transaction is lost, none that was not acknowledged appears unless it was in
//! flight at the crash, a transaction in flight is all or nothing, and CHECK TABLE finds every
//! index equal to its rows after recovery.
//!
//! # How
//!
//! One persistent datadir; each cycle starts the server on it (alternating
//! `one-thread-per-connection` and `pool-of-threads`, `innodb_flush_log_at_trx_commit=1`), runs
//! [`WORKERS`] connections that each commit multi-statement transactions as fast as they can
//! (so several committers are in flight and group commit merges their syncs: the test fails if
//! it never did), SIGKILLs the server once a random number of transactions have been
//! acknowledged (plus a random few milliseconds), restarts it and verifies.
//!
//! Each worker owns its rows (its `acct` rows, the `items` it inserted), so there are no lock
//! conflicts and each worker can keep an exact model of what its rows must hold: a
//! transaction updates 2-3 of its `acct` rows (`txn` and `v`, both in secondary indexes),
//! inserts 1-3 `items` (UNIQUE `tag`, indexed `txn`), maybe deletes an older item, and inserts
//! its id into `log`. The model is advanced only when COMMIT returned OK. At the kill each
//! worker has at most one transaction in flight; after the restart its `log` row tells whether
//! it committed, and the worker's rows must then equal exactly the model with or without it:
//! every effect present or none (a transaction whose COMMIT was never sent must be absent).
//! The verified state becomes the model of the next cycle.
//!
//! # Power loss
//!
//! A SIGKILL loses nothing the process wrote (the page cache keeps it), so it cannot tell a
//! commit acknowledged after its WAL sync from one acknowledged before. The power-loss variant
//! runs the server with the LD_PRELOAD shim `support/powerloss.c` (built with gcc), which
//! journals each successful fsync/fdatasync (file, size covered) and rename. After the kill
//! every datadir file is cut back to what its last sync covered (files never synced during the
//! run to their size at its start, after a sync(2)), and only then is the server restarted.
//! With the WAL sync of group commit disabled, the kill -9 variant still passes and this one
//! fails at the first cycle (acknowledged transactions missing).
//!
//! The suite runs [`DEFAULT_CYCLES`] cycles of each (well under a second per cycle on an
//! idle 2-core machine); `SHOAL_CRASH_CYCLES=N` runs more (`scripts/crash-cycles.sh`),
//! `SHOAL_CRASH_SEED=S` repeats a run's random choices (the seed is printed first, and in
//! every failure).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{global_status, temp_dir, Shoal as Srv};

/// Cycles run by the suite (seeded short version).
const DEFAULT_CYCLES: usize = 6;
/// Concurrent committing connections.
const WORKERS: usize = 6;
/// `acct` rows per worker.
const ACCT_ROWS: usize = 8;
/// Every item's `pad`: its tag and 600 bytes of filler, about 2 KiB of writes per transaction, so a
/// cycle fills a memtable of the 5 MiB buffer pool about every other time and the crashes
/// also meet memtable flushes and compactions.
fn pad(tag: &str) -> String {
    format!("{tag}:{}", "pad".repeat(200))
}

/// What one worker's rows must hold.
#[derive(Debug, Clone, PartialEq, Default)]
struct Model {
    /// `acct` rows of this worker, by index: (txn, v).
    acct: Vec<(i64, i64)>,
    /// `items` of this worker: id -> (txn, tag).
    items: BTreeMap<i64, (i64, String)>,
    /// `log` rows of this worker: txn -> number of items inserted.
    log: BTreeMap<i64, i64>,
}

/// One transaction: everything it changes, so it can be applied to a model.
#[derive(Debug, Clone)]
struct Txn {
    id: i64,
    /// Indexes into `Model::acct` to update (`txn = id, v = v + 1`).
    updates: Vec<usize>,
    /// Items to insert: (id, tag).
    inserts: Vec<(i64, String)>,
    /// Item to delete.
    delete: Option<i64>,
}

impl Txn {
    fn apply(&self, m: &mut Model) {
        for &i in &self.updates {
            m.acct[i] = (self.id, m.acct[i].1 + 1);
        }
        for (id, tag) in &self.inserts {
            m.items.insert(*id, (self.id, tag.clone()));
        }
        if let Some(d) = self.delete {
            m.items.remove(&d);
        }
        m.log.insert(self.id, self.inserts.len() as i64);
    }
}

fn acct_id(w: usize, i: usize) -> i64 {
    (w * 100 + i) as i64
}

/// How a worker's run ended.
struct WorkerEnd {
    model: Model,
    /// The transaction in flight at the kill, and whether its COMMIT had been sent.
    in_flight: Option<(Txn, bool)>,
    acked: u64,
    /// A server error (not a lost connection): a bug, whatever the kill did.
    server_error: Option<String>,
}

/// One worker: commits transactions on `c` until one fails (the kill). Connected by the
/// caller, so every worker is in the game before the kill is timed.
fn run_worker(
    mut c: Conn,
    w: usize,
    cycle: usize,
    mut model: Model,
    mut rng: StdRng,
    stop: Arc<AtomicBool>,
    acked_total: Arc<AtomicU64>,
) -> WorkerEnd {
    let mut end = WorkerEnd {
        model: Model::default(),
        in_flight: None,
        acked: 0,
        server_error: None,
    };
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        let id = (cycle as i64 + 1) * 1_000_000 + w as i64 * 100_000 + seq;
        let mut rows: Vec<usize> = (0..ACCT_ROWS).collect();
        let n_up = rng.gen_range(2..=3);
        let updates: Vec<usize> = (0..n_up)
            .map(|_| rows.swap_remove(rng.gen_range(0..rows.len())))
            .collect();
        let inserts: Vec<(i64, String)> = (0..rng.gen_range(1..=3))
            .map(|i| (id * 4 + i, format!("t{id}-{i}")))
            .collect();
        let delete = if !model.items.is_empty() && rng.gen_bool(0.5) {
            let k: Vec<&i64> = model.items.keys().collect();
            Some(*k[rng.gen_range(0..k.len())])
        } else {
            None
        };
        let txn = Txn {
            id,
            updates,
            inserts,
            delete,
        };
        let mut statements = vec!["BEGIN".to_string()];
        let ids: Vec<String> = txn
            .updates
            .iter()
            .map(|&i| acct_id(w, i).to_string())
            .collect();
        statements.push(format!(
            "UPDATE crash.acct SET txn = {id}, v = v + 1 WHERE id IN ({})",
            ids.join(",")
        ));
        let values: Vec<String> = txn
            .inserts
            .iter()
            .map(|(i, tag)| format!("({i}, {id}, {w}, '{tag}', '{}')", pad(tag)))
            .collect();
        statements.push(format!(
            "INSERT INTO crash.items (id, txn, w, tag, pad) VALUES {}",
            values.join(", ")
        ));
        if let Some(d) = txn.delete {
            statements.push(format!("DELETE FROM crash.items WHERE id = {d}"));
        }
        statements.push(format!(
            "INSERT INTO crash.log (txn, w, n) VALUES ({id}, {w}, {})",
            txn.inserts.len()
        ));
        let mut failed = None;
        for s in &statements {
            if let Err(e) = c.query_drop(s) {
                failed = Some(e);
                break;
            }
        }
        let mut commit_sent = false;
        if failed.is_none() {
            commit_sent = true;
            match c.query_drop("COMMIT") {
                Ok(()) => {
                    txn.apply(&mut model);
                    end.acked += 1;
                    acked_total.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                Err(e) => failed = Some(e),
            }
        }
        let e = failed.expect("set above");
        if let mysql::Error::MySqlError(m) = &e {
            end.server_error = Some(format!(
                "worker {w}: server error {}: {}",
                m.code, m.message
            ));
        }
        end.in_flight = Some((txn, commit_sent));
        break;
    }
    end.model = model;
    end
}

/// What differs between two models, briefly (the models themselves are long).
fn diff(found: &Model, expected: &Model) -> String {
    let mut out = Vec::new();
    for (i, (f, e)) in found.acct.iter().zip(&expected.acct).enumerate() {
        if f != e {
            out.push(format!("acct[{i}] (txn, v) = {f:?}, expected {e:?}"));
        }
    }
    for (id, v) in &expected.items {
        match found.items.get(id) {
            None => out.push(format!("item {id} {v:?} missing")),
            Some(f) if f != v => out.push(format!("item {id} = {f:?}, expected {v:?}")),
            _ => {}
        }
    }
    for (id, v) in &found.items {
        if !expected.items.contains_key(id) {
            out.push(format!("item {id} {v:?} unexpected"));
        }
    }
    for t in expected.log.keys() {
        if !found.log.contains_key(t) {
            out.push(format!("log row of transaction {t} missing"));
        }
    }
    for t in found.log.keys() {
        if !expected.log.contains_key(t) {
            out.push(format!("log row of transaction {t} unexpected"));
        }
    }
    out.join("; ")
}

/// The state of every worker's rows as the server has it now.
fn read_state(c: &mut Conn) -> Vec<Model> {
    let mut models = vec![Model::default(); WORKERS];
    for m in models.iter_mut() {
        m.acct = vec![(0, 0); ACCT_ROWS];
    }
    let acct: Vec<(i64, i64, i64, i64)> = c
        .query("SELECT id, owner, txn, v FROM crash.acct ORDER BY id")
        .unwrap();
    assert_eq!(acct.len(), WORKERS * ACCT_ROWS, "acct rows: {acct:?}");
    for (id, owner, txn, v) in acct {
        let (w, i) = ((id / 100) as usize, (id % 100) as usize);
        assert_eq!(owner as usize, w);
        models[w].acct[i] = (txn, v);
    }
    let items: Vec<(i64, i64, i64, String, String)> = c
        .query("SELECT id, txn, w, tag, pad FROM crash.items")
        .unwrap();
    for (id, txn, w, tag, pad) in items {
        assert_eq!(pad, self::pad(&tag), "item {id}'s pad");
        models[w as usize].items.insert(id, (txn, tag));
    }
    let log: Vec<(i64, i64, i64)> = c.query("SELECT txn, w, n FROM crash.log").unwrap();
    for (txn, w, n) in log {
        models[w as usize].log.insert(txn, n);
    }
    models
}

/// CHECK TABLE on every table: (table, Msg_type, Msg_text) rows that are not `status OK`.
fn check_tables(c: &mut Conn) -> Vec<(String, String, String)> {
    let rows: Vec<(String, String, String, String)> = c
        .query("CHECK TABLE crash.acct, crash.items, crash.log")
        .unwrap();
    assert!(rows.len() >= 3, "{rows:?}");
    rows.into_iter()
        .filter(|r| !(r.2 == "status" && r.3 == "OK"))
        .map(|r| (r.0, r.2, r.3))
        .collect()
}

fn create_schema(c: &mut Conn) {
    c.query_drop("CREATE DATABASE crash").unwrap();
    c.query_drop(
        "CREATE TABLE crash.acct (id INT PRIMARY KEY, owner INT NOT NULL, txn BIGINT NOT NULL, \
         v INT NOT NULL, KEY k_txn (txn), KEY k_owner_v (owner, v))",
    )
    .unwrap();
    c.query_drop(
        "CREATE TABLE crash.items (id BIGINT PRIMARY KEY, txn BIGINT NOT NULL, w INT NOT NULL, \
         tag VARCHAR(40), pad VARCHAR(700), UNIQUE KEY u_tag (tag), KEY k_txn (txn))",
    )
    .unwrap();
    c.query_drop(
        "CREATE TABLE crash.log (txn BIGINT PRIMARY KEY, w INT NOT NULL, n INT NOT NULL, \
         KEY k_w (w))",
    )
    .unwrap();
    for w in 0..WORKERS {
        let rows: Vec<String> = (0..ACCT_ROWS)
            .map(|i| format!("({}, {w}, 0, 0)", acct_id(w, i)))
            .collect();
        c.query_drop(format!("INSERT INTO crash.acct VALUES {}", rows.join(",")))
            .unwrap();
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// How a cycle's server dies.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Crash {
    /// SIGKILL: the OS keeps every write the process made.
    Kill,
    /// SIGKILL, then every file of the datadir cut back to what its last sync covered
    /// ([`power_loss`]): what a machine that lost power could have left.
    PowerLoss,
}

/// The power-loss journal shim (`support/powerloss.c`), built with gcc into `dir`; `None`
/// (with the reason) when it cannot be built.
fn build_shim(dir: &Path) -> Result<PathBuf, String> {
    let src = dir.join("powerloss.c");
    std::fs::write(&src, include_str!("support/powerloss.c")).unwrap();
    let so = dir.join("powerloss.so");
    let out = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .output()
        .map_err(|e| format!("gcc not runnable ({e}); scripts/deps.sh installs it"))?;
    if !out.status.success() {
        return Err(format!(
            "gcc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(so)
}

/// Sizes of the regular files under `dir` (canonical paths).
fn file_sizes(dir: &Path) -> HashMap<PathBuf, u64> {
    let mut out = HashMap::new();
    let mut stack = vec![std::fs::canonicalize(dir).unwrap()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                out.insert(e.path(), m.len());
            }
        }
    }
    out
}

/// What [`power_loss`] found and did.
#[derive(Debug, Default)]
struct PowerLoss {
    /// Syncs in the journal.
    syncs: usize,
    /// SST files (memtable flushes, compactions) written and synced during the run.
    tables_written: usize,
    /// Files cut: (name, bytes dropped).
    cuts: Vec<(String, u64)>,
}

/// Cuts every file under `data` back to the size its last sync covered, following the
/// journal's renames; files the journal never mentions keep at most their size in `durable`
/// (all synced before the run), files created during the run and never synced become empty.
fn power_loss(data: &Path, durable: &HashMap<PathBuf, u64>, journal: &Path) -> PowerLoss {
    let mut synced: HashMap<PathBuf, u64> = HashMap::new();
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    let mut out = PowerLoss::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("S ") {
            let (size, path) = rest.split_once(' ').expect("S size path");
            out.syncs += 1;
            if path.ends_with(".sst") && !synced.contains_key(Path::new(path)) {
                out.tables_written += 1;
            }
            synced.insert(PathBuf::from(path), size.parse().unwrap());
        } else if let Some(rest) = line.strip_prefix("R ") {
            let (from, to) = rest.split_once('\t').expect("R from\tto");
            let (from, to) = (PathBuf::from(from), PathBuf::from(to));
            let size = synced
                .remove(&from)
                .or_else(|| durable.get(&from).copied())
                .unwrap_or(0);
            synced.insert(to, size);
        }
    }
    for (path, size) in file_sizes(data) {
        let keep = synced
            .get(&path)
            .or_else(|| durable.get(&path))
            .copied()
            .unwrap_or(0);
        if size > keep {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(keep).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.cuts.push((name, size - keep));
        }
    }
    out.cuts.sort();
    out
}

/// Runs `cycles` crash cycles of `kind` (module docs); returns a summary line.
fn run_cycles(kind: Crash, cycles: usize, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let tag = match kind {
        Crash::Kill => "crash-cycles",
        Crash::PowerLoss => "power-loss",
    };
    let dir = temp_dir(tag);
    let data = dir.join("data");
    let journal = dir.join("powerloss.journal");
    let shim = match kind {
        Crash::Kill => None,
        Crash::PowerLoss => Some(build_shim(&dir).unwrap_or_else(|e| panic!("{e}"))),
    };
    let modes = ["one-thread-per-connection", "pool-of-threads"];
    let start = |cycle: usize, traced: bool| {
        let args = [
            format!("--thread-handling={}", modes[cycle % 2]),
            "--innodb-flush-log-at-trx-commit=1".to_string(),
            // The smallest buffer pool: 1 MiB memtables, so memtable flushes (SST files,
            // MANIFEST edits) happen within the cycles, not only at startup.
            "--innodb-buffer-pool-size=5M".to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match (&shim, traced) {
            (Some(so), true) => {
                let _ = std::fs::remove_file(&journal);
                let wrapper = vec![
                    "env".to_string(),
                    format!("LD_PRELOAD={}", so.display()),
                    format!("SHOAL_POWERLOSS_JOURNAL={}", journal.display()),
                ];
                Srv::start_wrapped(&dir, &wrapper, &args)
            }
            _ => Srv::start_in(&dir, &args),
        }
    };
    let mut s = start(0, false);
    create_schema(&mut s.conn());
    let mut models: Vec<Model> = read_state(&mut s.conn());
    s.stop_with(libc::SIGKILL);
    let (mut total_acked, mut total_commits, mut total_groups) = (0u64, 0u64, 0u64);
    let (mut in_flight_committed, mut in_flight_lost) = (0, 0);
    let (mut cut_files, mut cut_bytes, mut tables_written) = (0, 0, 0);
    for cycle in 0..cycles {
        let ctx = format!("{kind:?} seed {seed}, cycle {cycle} ({})", modes[cycle % 2]);
        // What is on disk now counts as synced: sync(2) makes it so.
        unsafe { libc::sync() };
        let durable = file_sizes(&data);
        s = start(cycle, true);
        let mut status = s.conn();
        let commits0 = global_status(&mut status, "Shoal_store_write_commits");
        let groups0 = global_status(&mut status, "Shoal_store_commit_groups");
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let opts = s
                    .mysql_opts()
                    .read_timeout(Some(Duration::from_secs(60)))
                    .write_timeout(Some(Duration::from_secs(60)));
                let c = Conn::new(opts).unwrap_or_else(|e| panic!("{ctx}: connect: {e}"));
                let (model, stop, acked) = (models[w].clone(), stop.clone(), acked.clone());
                let wrng = StdRng::seed_from_u64(rng.gen());
                std::thread::spawn(move || run_worker(c, w, cycle, model, wrng, stop, acked))
            })
            .collect();
        // Kill after a random number of acknowledged transactions, a few ms into the next.
        let target = rng.gen_range(50..500);
        let deadline = Instant::now() + Duration::from_secs(120);
        while acked.load(Ordering::Relaxed) < target {
            assert!(
                Instant::now() < deadline,
                "{ctx}: only {} of {target} transactions acknowledged in 120 s",
                acked.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let commits = global_status(&mut status, "Shoal_store_write_commits") - commits0;
        let groups = global_status(&mut status, "Shoal_store_commit_groups") - groups0;
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..20_000)));
        s.stop_with(libc::SIGKILL);
        stop.store(true, Ordering::Relaxed);
        let ends: Vec<WorkerEnd> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        for e in &ends {
            assert!(e.server_error.is_none(), "{ctx}: {:?}", e.server_error);
        }
        let cycle_acked: u64 = ends.iter().map(|e| e.acked).sum();
        total_acked += cycle_acked;
        total_commits += commits;
        total_groups += groups;
        let mut lost = String::new();
        if kind == Crash::PowerLoss {
            let pl = power_loss(&data, &durable, &journal);
            cut_files += pl.cuts.len();
            cut_bytes += pl.cuts.iter().map(|c| c.1).sum::<u64>();
            tables_written += pl.tables_written;
            lost = format!(
                "; {} syncs journaled, {} SST files written; the power loss dropped unsynced \
                 bytes (file, bytes): {:?}",
                pl.syncs, pl.tables_written, pl.cuts
            );
        }

        s = start(cycle, false);
        let mut c = s.conn();
        let found = read_state(&mut c);
        let mut settled = 0;
        for (w, e) in ends.into_iter().enumerate() {
            let mut expected = e.model;
            if let Some((txn, commit_sent)) = &e.in_flight {
                if found[w].log.contains_key(&txn.id) {
                    assert!(
                        *commit_sent,
                        "{ctx}: worker {w}: transaction {} committed without COMMIT",
                        txn.id
                    );
                    txn.apply(&mut expected);
                    in_flight_committed += 1;
                    settled += 1;
                } else {
                    in_flight_lost += 1;
                }
            }
            assert!(
                found[w] == expected,
                "{ctx}: worker {w}: rows differ from the acknowledged transactions: {} \
                 (in flight: {:?})",
                diff(&found[w], &expected),
                e.in_flight
            );
            models[w] = expected;
        }
        let problems = check_tables(&mut c);
        assert!(problems.is_empty(), "{ctx}: CHECK TABLE: {problems:?}");
        eprintln!(
            "{ctx}: {cycle_acked} acknowledged ({target} wanted before the kill), \
             {commits} commits in {groups} sync groups before it, \
             {settled} in-flight transaction(s) found committed{lost}; CHECK TABLE OK"
        );
        s.stop_with(libc::SIGKILL);
    }
    assert!(
        total_groups < total_commits,
        "{kind:?} seed {seed}: group commit never merged two commits ({total_commits} commits, \
         {total_groups} groups): the committers were never in flight together"
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
    let mut summary = format!(
        "{kind:?} seed {seed}: {cycles} cycles, {total_acked} acknowledged transactions, none \
         lost; in flight at the kills: {in_flight_committed} committed, {in_flight_lost} not; \
         {total_commits} commits in {total_groups} sync groups"
    );
    if kind == Crash::PowerLoss {
        summary += &format!(
            "; {cut_bytes} unsynced bytes in {cut_files} file cuts dropped; {tables_written} \
             SST files written under the journal"
        );
    }
    summary
}

fn seed() -> u64 {
    env_or(
        "SHOAL_CRASH_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    )
}

#[test]
fn kill_9_cycles_lose_no_acknowledged_transaction() {
    let cycles = env_or("SHOAL_CRASH_CYCLES", DEFAULT_CYCLES);
    let seed = seed();
    eprintln!("kill -9 cycles: {cycles}, seed {seed} (SHOAL_CRASH_SEED={seed} repeats it)");
    eprintln!("{}", run_cycles(Crash::Kill, cycles, seed));
}

#[test]
fn power_loss_cycles_lose_no_acknowledged_transaction() {
    let cycles = env_or("SHOAL_CRASH_CYCLES", DEFAULT_CYCLES);
    let seed = seed();
    let probe = temp_dir("power-loss-shim");
    let built = build_shim(&probe);
    let _ = std::fs::remove_dir_all(&probe);
    if let Err(why) = built {
        eprintln!("SKIPPED: the power-loss shim cannot be built: {why}");
        return;
    }
    eprintln!("power-loss cycles: {cycles}, seed {seed} (SHOAL_CRASH_SEED={seed} repeats it)");
    eprintln!("{}", run_cycles(Crash::PowerLoss, cycles, seed));
}
