//! CPU affinity (`thread_pool_cpu_affinity`): each group's workers on one CPU, each local
//! client's connection in the group of the CPU its client runs on.
//!
//! ## Why
//!
//! A pool worker answers a different connection after every command, so each answer wakes a
//! different client thread. Linux sees a waker with many wakees (`wake_wide`) and puts each
//! woken thread back on the CPU it last ran on instead of next to the waker. With the worker
//! on one CPU and the client last seen on the other, every answer's `sendto` takes the other
//! CPU's run-queue lock and often sends it a rescheduling interrupt (an exit to the
//! hypervisor in a VM). With 64 sysbench clients on 2 cores that cost the pool 3 µs of
//! kernel time per point select against one thread per connection, whose server thread
//! always wakes the same client on its own CPU (docs/perf-log, sessions 28 and 29).
//!
//! ## How
//!
//! * **Workers stay on their group's CPU.** Group `g`'s CPU is the `g % n`-th of the `n` CPUs
//!   the server was allowed at start (`sched_getaffinity`). A worker applies its group's
//!   placement before each entry it runs (one relaxed load when nothing changed): pinned to
//!   that CPU while affinity is effective, free on every allowed CPU otherwise. Affinity is
//!   effective while `thread_pool_cpu_affinity` is ON, the server may use at least 2 CPUs
//!   and `thread_pool_size` is at least the CPU count (with fewer groups some CPUs would have
//!   none, and pinning would leave them idle). When the placement changes, the timer's next
//!   judgement (or tick) moves every live thread of the group by its thread id (`Shared::place_groups`):
//!   an idle worker or a listener that only dispatches runs no entry for a while, and would
//!   otherwise stay where it was (so `taskset -p` on any pool thread shows the placement).
//! * **Connections follow their clients.** The kernel records, per socket, the CPU that
//!   processed its last incoming packet (`SO_INCOMING_CPU`). Over loopback that is the CPU
//!   the client thread ran on when it sent its command, the CPU the kernel will wake it on.
//!   After every [`PROBE_EVERY`]-th command [`home_group`] asks it and picks the group for the
//!   connection's next commands among the groups of that CPU (by connection id when there are
//!   several); a connection whose client moved is migrated there by the re-arm, as after a
//!   resize. So the answer's wake-up stays on the worker's CPU, and the scheduler's own
//!   balancing of client threads between CPUs balances the groups.
//! * **No herding.** A connection moves into its client's CPU's group only while that group
//!   holds less than one and a half times its even share of the connections ([`room_in`]);
//!   otherwise it stays where it is (`Threadpool_steering_refused`). An event-loop client's
//!   few threads can all run on one CPU for a while (its other CPU busy with the server's
//!   pinned workers), and every connection followed them: at 512 read-write clients from
//!   shoal-bench's two threads, the groups swung between 499 and 15 connections within a
//!   second and back, one group's two workers facing the whole queue while the other CPU's
//!   idled (docs/perf-log, session 43). A connection held back wakes its client across
//!   CPUs, the cost affinity saves: a bound of an eighth over the share refused 4-8 % of the
//!   moves asked for (the clients' CPUs are lopsided much of the time) and gained nothing
//!   measurable; one of a half refuses about half as many and still stops the herd.
//! * **Only while the clients are spread over the CPUs.** One client thread driving many
//!   connections (an event-loop client, `shoal-bench`) sends everything from one CPU at a time:
//!   steering would crowd every connection into that CPU's group, beside the client, and the
//!   other CPU's pinned workers would idle (`shoal-bench` at 8 connections fell to 0.74-0.83x
//!   one thread per connection). So each group counts its local connections' commands by the
//!   CPU they came from (`seen`, counted at the re-arm), and the timer judges the counts every
//!   [`JUDGE_EVERY`] while they send ([`judge`]; every [`JUDGE_IDLE_EVERY`] while they do not):
//!   affinity *engages* (pins, steers) after [`ENGAGE_ROUNDS`] judgements in a
//!   row in which every CPU sent at least half its even share, and lets go after one in
//!   which some CPU sent under a quarter of it; then connections go back to `id % size` and
//!   the workers are free again. `Threadpool_cpu_affinity_engaged` shows the state. Lingered
//!   commands are not re-armed and not counted.
//! * **Only while many clients are busy.** With lingering on, affinity also needs at least
//!   [`MIN_BUSY_PER_CPU`] local connections a CPU that ran a command since the last judgement (lingered
//!   commands count here), and lets go below it. Fewer are the low-concurrency regime, where
//!   every busy connection can have a lingering worker of its own and pairing (below) serves
//!   them for less. This count does not depend on the state it decides. The spread counts
//!   do: engaged, a steered connection outside its `id % size` group is refused its linger,
//!   so its commands are re-armed and counted. Before the count, 8 sysbench clients that
//!   followed a run of 64 found affinity still engaged and kept it so for as long as they
//!   ran, at 10-40 % more CPU a point select than on a fresh server (docs/perf-log, session
//!   37).
//! * **Pairs at low concurrency.** While affinity is effective but not engaged, a worker about
//!   to linger on a local connection moves to its client's CPU (`Shared::pair_with_client`
//!   in `worker.rs`): a lingering worker and its client take turns, so one CPU serves the
//!   pair and every wake-up between them stays on it. The worker's group placement comes back
//!   with the first entry it takes from the queue or the listener, or at its next linger once
//!   affinity has engaged. Pairing serves clients with a thread each, spread over the CPUs
//!   (sysbench, a thread-per-request application): a worker pairs only while lingering
//!   workers find clients sending from more than one CPU within 10 ms, and a CPU takes no more
//!   than its share of the paired workers. One client thread multiplexing many connections
//!   (an event loop) never waits for one of them: all their workers pinned beside it left the
//!   other CPU idle (session 40), and even one cost a few per cent (session 41).
//! * **Only local TCP clients are steered**: a connection whose peer is a loopback address.
//!   For a remote client the incoming CPU is the CPU of the network card's receive queue,
//!   which says nothing about any thread to wake, and steering by it could put every
//!   connection in one group. Unix-socket connections report no incoming CPU. Those keep
//!   their `id % thread_pool_size` group; their workers are pinned all the same (one group's
//!   workers per CPU), which costs nothing while every group has work.
//!
//! ## Costs and limits
//!
//! One `getsockopt` per [`PROBE_EVERY`] commands of a steered connection. A group's extra
//! workers (a stall, a reported wait, oversubscription) share their group's CPU instead of
//! spreading to an idle one: a long statement on one CPU competes with its group's short ones there until the
//! scheduler moves their clients, and with them their connections, to the other CPU. At 8
//! clients, where lingering already keeps client and worker together, affinity is measured
//! at about the same cost; from 32 clients on it is the cheaper pool (PERFORMANCE.md).

use std::os::fd::RawFd;

/// The CPUs the calling thread may run on, in ascending order (empty if the kernel would not
/// say). Public for tests and tools that place their own threads.
pub fn allowed_cpus() -> Vec<usize> {
    #[cfg(not(loom))]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: pid 0 is the calling thread; the size is the set's.
        let r =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if r != 0 {
            return Vec::new();
        }
        // SAFETY: reading bits of an initialised set.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }
    #[cfg(loom)]
    Vec::new()
}

/// Restricts the calling thread to `cpus` (`sched_setaffinity`; CPUs beyond the kernel's set
/// size are left out). Public for tests and tools that place their own threads.
pub fn set_thread_cpus(cpus: &[usize]) -> std::io::Result<()> {
    set_cpus_of(0, cpus)
}

/// Restricts thread `tid` of this process (0: the calling thread) to `cpus`.
fn set_cpus_of(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    #[cfg(not(loom))]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            if c < libc::CPU_SETSIZE as usize {
                // SAFETY: `c` is within the set.
                unsafe { libc::CPU_SET(c, &mut set) };
            }
        }
        // SAFETY: `tid` names a thread (or 0, the caller); the set is initialised.
        let r =
            unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(loom)]
    let _ = (tid, cpus);
    Ok(())
}

/// Restricts the calling thread to `cpus`. Failure (a CPU taken away by a cgroup since the
/// start) leaves the thread where it was: placement is an optimisation, never a condition.
pub(super) fn run_on(cpus: &[usize]) {
    let _ = set_thread_cpus(cpus);
}

/// Restricts thread `tid` (another thread of this process) to `cpus`, as [`run_on`] does for
/// the caller. Failure is ignored the same way; the thread may also have just exited.
pub(super) fn place_thread(tid: i32, cpus: &[usize]) {
    let _ = set_cpus_of(tid, cpus);
}

/// The kernel's id of the calling thread, for [`place_thread`] (0 under loom).
pub(super) fn current_tid() -> i32 {
    #[cfg(not(loom))]
    {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }
    #[cfg(loom)]
    0
}

/// The CPU that processed the last packet received on socket `fd` (`SO_INCOMING_CPU`), if the
/// kernel recorded one.
pub(super) fn incoming_cpu(fd: RawFd) -> Option<usize> {
    #[cfg(not(loom))]
    {
        let mut cpu: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `cpu` and `len` are valid for the option's size; a bad fd is an error return.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&mut cpu as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0 && cpu >= 0).then_some(cpu as usize)
    }
    #[cfg(loom)]
    {
        let _ = fd;
        None
    }
}

/// Whether socket `fd` is a TCP connection from this host (its peer a loopback address):
/// the only connections affinity steers (see the module doc).
pub(super) fn is_local_tcp(fd: RawFd) -> bool {
    #[cfg(not(loom))]
    {
        // SAFETY: a zeroed sockaddr_storage is valid; getpeername fills at most `len` bytes.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: as above; a bad fd or a non-socket is an error return.
        let r = unsafe {
            libc::getpeername(
                fd,
                (&mut ss as *mut libc::sockaddr_storage).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return false;
        }
        match libc::c_int::from(ss.ss_family) {
            libc::AF_INET => {
                // SAFETY: the family says the storage holds a sockaddr_in.
                let sin =
                    unsafe { &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
                std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)).is_loopback()
            }
            libc::AF_INET6 => {
                // SAFETY: the family says the storage holds a sockaddr_in6.
                let sin6 = unsafe {
                    &*(&ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
                };
                let a = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
            }
            _ => false,
        }
    }
    #[cfg(loom)]
    {
        let _ = fd;
        false
    }
}

/// Whether affinity is in effect for a pool of `size` groups on `cpus` CPUs with the switch
/// `on` (see the module doc).
pub(super) fn effective(on: bool, size: usize, cpus: usize) -> bool {
    on && cpus >= 2 && size >= cpus
}

/// The index (into the allowed CPUs) of group `gid`'s CPU.
pub(super) fn cpu_of_group(gid: usize, cpus: usize) -> usize {
    gid % cpus.max(1)
}

/// The group of a connection whose client runs on the `cpu`-th allowed CPU, in a pool of
/// `size` groups on `cpus` CPUs (affinity effective, so `size >= cpus` and `cpu < cpus`): one
/// of the groups `g < size` with `g % cpus == cpu`, chosen by connection `id` when there are
/// several.
pub(crate) fn home_group(id: u64, cpu: usize, size: usize, cpus: usize) -> usize {
    debug_assert!(cpus >= 1 && cpu < cpus && size >= cpus);
    // Groups cpu, cpu + cpus, cpu + 2 cpus, ... below size.
    let per = (size - cpu).div_ceil(cpus);
    cpu + cpus * ((id / cpus as u64) % per as u64) as usize
}

/// Whether a connection may be steered into a group that holds `to` connections, of `total`
/// in a pool of `size` groups: only while the group is below one and a half times its even
/// share (the slack at least [`MIN_SLACK`]). See "No herding" in the module doc.
pub(super) fn room_in(to: usize, total: usize, size: usize) -> bool {
    let fair = total.div_ceil(size.max(1));
    to < fair + (fair / 2).max(MIN_SLACK)
}

/// The least slack [`room_in`] grants a group above its even share of the connections.
pub(super) const MIN_SLACK: usize = 2;

/// A steered connection's client CPU is asked (`getsockopt`) on one command in this many: a
/// client thread rarely moves between two commands, and the system call was 0.7 % of the
/// server's samples in read-write at 64 clients when asked on every one.
pub(super) const PROBE_EVERY: u8 = 4;

/// CPUs told apart in the engagement's counts (a group's `seen`); CPU `i` counts in `i % 16`.
pub(super) const SEEN_CPUS: usize = 16;

/// Judgements in a row whose commands came from every CPU before affinity engages.
pub(super) const ENGAGE_ROUNDS: u32 = 4;

/// How often the timer judges the spread while local clients send at least [`JUDGE_MIN`]
/// commands between judgements. It used to judge at every tick (`thread_pool_stall_limit`,
/// 500 ms): four spread judgements took 2 s, the first fifth of a 10 s sysbench run at 64
/// clients spent paired rather than engaged (docs/perf-log, session 38).
pub(super) const JUDGE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// How often the timer judges while local clients send fewer than [`JUDGE_MIN`] commands
/// between judgements: the stall sampler's pace, so an idle server wakes no more often.
pub(super) const JUDGE_IDLE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Fewest local connections a CPU that ran a command between two judgements for affinity to engage
/// (or stay engaged) while lingering is on. Below it, lingering gives every busy connection a
/// worker of its own, and pairing keeps each pair on one CPU; pinning and steering would
/// refuse half of them their linger (a steered connection outside its `id % size` group does
/// not linger) and cost more. sysbench, shoal's pool engaged against pairing, server CPU a
/// statement or transaction, 3 rounds (docs/perf-log, session 37): at 16 clients (8 a CPU)
/// pairing was cheaper for point select (engaged / paired 1.09 / 0.97 / 1.04) and read-write
/// (1.06 / 1.02 / 1.08); at 32 (16 a CPU) engaging was cheaper for read-write (0.93 / 0.93 /
/// 0.91, TPS 1.10-1.14x) and dearer for point select (1.06 / 1.02 / 1.04).
pub(super) const MIN_BUSY_PER_CPU: u64 = 12;

/// Fewest commands between two judgements for a judgement of the clients' spread.
pub(super) const JUDGE_MIN: u64 = 64;

/// Whether affinity should be engaged, from the commands of local connections since the last judgement by
/// the CPU their clients sent from (`by_cpu`) and whether it is now: engage when every CPU sent
/// at least half its even share, let go when one sent under a quarter of it (the gap is
/// hysteresis). `None`: too few commands to judge, keep the state.
///
/// `busy` is the number of local connections that ran a command in that window (lingered ones
/// too) and `pairing` whether lingering is on: then fewer than [`MIN_BUSY_PER_CPU`] a CPU is
/// the low-concurrency regime, where pairing serves better, and the answer is `false` whatever
/// the spread. The count does not depend on the state it decides: the spread counts do (an
/// engaged pool refuses some connections their linger, and their commands are then counted),
/// so with them alone a few clients kept affinity engaged once many had engaged it.
pub(super) fn judge(by_cpu: &[u64], busy: u64, pairing: bool, engaged: bool) -> Option<bool> {
    if pairing && busy < MIN_BUSY_PER_CPU * by_cpu.len() as u64 {
        return Some(false);
    }
    let total: u64 = by_cpu.iter().sum();
    if total < JUDGE_MIN || by_cpu.is_empty() {
        return None;
    }
    let n = by_cpu.len() as u64;
    let min = by_cpu.iter().copied().min().unwrap_or(0);
    // min / total against (1 / n) / 2 or / 4, in integers.
    let need = if engaged { 4 } else { 2 };
    Some(min * n * need >= total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_group_is_a_group_of_the_clients_cpu_and_spreads_by_id() {
        for cpus in 1..=5 {
            for size in cpus..=12 {
                for cpu in 0..cpus {
                    let mut seen = std::collections::BTreeSet::new();
                    for id in 0..200 {
                        let g = home_group(id, cpu, size, cpus);
                        assert!(g < size, "group {g} of size {size}");
                        assert_eq!(cpu_of_group(g, cpus), cpu, "cpus {cpus} size {size}");
                        seen.insert(g);
                    }
                    // every group of that CPU gets connections
                    let expect: Vec<_> = (0..size).filter(|g| g % cpus == cpu).collect();
                    assert_eq!(seen.into_iter().collect::<Vec<_>>(), expect);
                }
            }
        }
    }

    #[test]
    fn steering_stops_at_one_and_a_half_shares() {
        // 512 connections on 2 groups: a share of 256, a slack of 128
        assert!(room_in(0, 512, 2));
        assert!(room_in(383, 512, 2));
        assert!(!room_in(384, 512, 2), "the herd stops at 384");
        assert!(!room_in(500, 512, 2));
        // small pools: the least slack
        assert!(room_in(4, 6, 2) && !room_in(5, 6, 2));
        assert!(room_in(5, 10, 3) && !room_in(6, 10, 3));
        // more groups than CPUs: the share is per group
        assert!(room_in(191, 512, 4) && !room_in(192, 512, 4));
        // an empty pool (a stale count of zero) admits the first
        assert!(room_in(0, 0, 2));
    }

    #[test]
    fn judge_engages_on_spread_clients_with_hysteresis() {
        assert_eq!(
            judge(&[10, 10], 1000, true, false),
            None,
            "too few to judge"
        );
        assert_eq!(judge(&[500, 500], 1000, true, false), Some(true));
        assert_eq!(
            judge(&[700, 300], 1000, true, false),
            Some(true),
            "30 % >= 25 %"
        );
        assert_eq!(
            judge(&[800, 200], 1000, true, false),
            Some(false),
            "20 % < 25 %: not yet"
        );
        assert_eq!(
            judge(&[800, 200], 1000, true, true),
            Some(true),
            "20 % >= 12.5 %: stays"
        );
        assert_eq!(
            judge(&[1000, 0], 1000, true, true),
            Some(false),
            "one client CPU: let go"
        );
        assert_eq!(judge(&[100, 100, 0, 100], 1000, true, false), Some(false));
    }

    #[test]
    fn few_busy_connections_let_go_while_lingering_pairs_them() {
        let enough = MIN_BUSY_PER_CPU * 2;
        // spread clients, many of them: engage, and stay engaged
        assert_eq!(judge(&[500, 500], enough, true, false), Some(true));
        assert_eq!(judge(&[500, 500], enough, true, true), Some(true));
        // spread but few (8 clients on 2 CPUs): let go, even with too few commands to judge
        // the spread, and do not engage
        assert_eq!(judge(&[500, 500], 8, true, true), Some(false));
        assert_eq!(judge(&[10, 10], 8, true, true), Some(false));
        assert_eq!(judge(&[500, 500], enough - 1, true, false), Some(false));
        // without lingering there is no pairing: the spread alone decides
        assert_eq!(judge(&[500, 500], 8, false, false), Some(true));
        assert_eq!(judge(&[10, 10], 8, false, true), None);
    }

    #[test]
    fn effective_only_with_two_cpus_and_a_group_for_each() {
        assert!(effective(true, 2, 2));
        assert!(effective(true, 8, 2));
        assert!(!effective(false, 2, 2));
        assert!(!effective(true, 1, 2), "a CPU without a group would idle");
        assert!(!effective(true, 4, 1), "one CPU: nothing to place");
    }

    #[test]
    fn loopback_peers_are_local_and_the_incoming_cpu_is_one_we_run_on() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        use std::io::Write;
        use std::os::fd::AsRawFd;
        c.write_all(b"x").unwrap();
        assert!(is_local_tcp(s.as_raw_fd()));
        let mut b = [0u8; 1];
        use std::io::Read;
        (&s).read_exact(&mut b).unwrap();
        let cpu = incoming_cpu(s.as_raw_fd()).expect("loopback records the incoming CPU");
        assert!(
            allowed_cpus().contains(&cpu),
            "{cpu} not in {:?}",
            allowed_cpus()
        );
        // not a socket
        assert!(!is_local_tcp(-1));
        assert_eq!(incoming_cpu(-1), None);
    }
}
