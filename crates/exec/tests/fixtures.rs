//! The SQL behaviour suite: every `tests/sql/tables/*.test` fixture run through the API.
mod common;

#[test]
fn sql_fixtures() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sql/tables");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("fixture dir") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "test") {
            common::run_fixture(&p);
            n += 1;
        }
    }
    assert!(n >= 1, "no fixtures found in {}", dir.display());
}
