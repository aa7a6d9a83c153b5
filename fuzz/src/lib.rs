//! The fuzz targets' checks, as plain functions so the integration tests can replay crashers and the
//! committed corpus with exactly the same checks (`tests/it/fuzz_regressions.rs` includes this file).

#[path = "checks.rs"]
pub mod checks;
