//! Compile-fail cases: one misuse of `#[scan_op]` per `tests/ui/*.rs`, with
//! the expected message in the `.stderr` next to it.
//! Regenerate after an intended change with `TRYBUILD=overwrite cargo test --test ui`
//! and read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
