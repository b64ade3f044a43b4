//! The crate's modules depend on each other one way, in the order `src/lib.rs` documents: each
//! module's code (comments aside) names only modules below it, so no two files import each
//! other. Read from the real sources, so a new `use crate::txn` in the engine fails here.

use std::path::{Path, PathBuf};

/// Top to bottom, as in the module map of `src/lib.rs`: a module may use those after it.
const ORDER: &[&str] = &[
    "check", "system", "txn", "engine", "lock", "stats", "catalog", "codec", "datum", "error",
];

/// The `.rs` files of module `m`: `src/m.rs` or every file under `src/m/`.
fn files_of(src: &Path, m: &str) -> Vec<PathBuf> {
    let file = src.join(format!("{m}.rs"));
    if file.exists() {
        return vec![file];
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(src.join(m))
        .unwrap_or_else(|e| panic!("module {m}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    v.sort();
    v
}

/// The crate modules the code of `text` names (`crate::name`), comment lines skipped. A file's
/// unit tests (`mod tests`, at its end) may use any module, like the integration tests.
fn used_modules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with("mod tests") {
            break;
        }
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[test]
fn modules_depend_one_way_in_the_documented_order() {
    // The directory cargo runs the test for (a binary reused from a build in another
    // checkout that shares the target directory carries that checkout's compile-time path).
    let dir = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    let src = Path::new(&dir).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    // Every module the crate declares is placed in the order (a new one must be).
    for line in lib.lines() {
        if let Some(m) = line
            .strip_prefix("pub mod ")
            .and_then(|l| l.strip_suffix(';'))
        {
            assert!(ORDER.contains(&m), "module {m} is missing from ORDER");
        }
    }
    let mut checked = 0;
    for (pos, m) in ORDER.iter().enumerate() {
        for file in files_of(&src, m) {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in used_modules(&text) {
                let Some(upos) = ORDER.iter().position(|o| *o == used) else {
                    continue; // re-exports at the crate root (`crate::Result`) and the like
                };
                assert!(
                    upos > pos || used == *m,
                    "{} uses crate::{used}, which is not below {m} in src/lib.rs's order",
                    file.display()
                );
            }
            checked += 1;
        }
    }
    // The engine alone is several files: the walk really read them.
    assert!(checked >= ORDER.len() + 5, "read only {checked} files");
}

#[test]
fn the_scanner_sees_uses_and_skips_comments() {
    let text = "use crate::engine::{Engine, Inner};\n/// see [`crate::txn`]\n\
                let x = crate::codec::f();\n#[cfg(test)]\nmod tests {\n    use crate::check;\n}\n";
    assert_eq!(used_modules(text), vec!["engine", "codec"]);
}
