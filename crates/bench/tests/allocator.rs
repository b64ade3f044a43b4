//! shoal-bench's allocator settings take effect in the built binary (`malloc_conf` in
//! src/main.rs): jemalloc prints its options at exit when asked (`stats_print`), and the
//! load generator's heap must be on transparent huge pages. The symbol jemalloc reads
//! depends on how it was built (prefixed or not), so a setting that compiles can still be
//! ignored: this runs the binary to see.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_shoal-bench");

/// jemalloc's printed options of one `shoal-bench --version` run with `MALLOC_CONF` set.
fn options_with(conf: &str) -> String {
    let o = Command::new(BIN)
        .arg("--version")
        .env("MALLOC_CONF", conf)
        .output()
        .expect("run shoal-bench");
    assert!(o.status.success(), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains("Begin jemalloc statistics"),
        "jemalloc did not read MALLOC_CONF: {err}"
    );
    err
}

#[test]
fn the_heap_is_on_huge_pages() {
    let err = options_with("stats_print:true");
    assert!(err.contains("opt.thp: \"always\""), "{err}");
    assert!(err.contains("opt.metadata_thp: \"always\""), "{err}");
}

#[test]
fn the_environment_overrides_the_built_in_settings() {
    let err = options_with("thp:default,stats_print:true");
    assert!(err.contains("opt.thp: \"default\""), "{err}");
}
