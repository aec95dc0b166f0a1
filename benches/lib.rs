//! Criterion benchmarks of Switchboard live in `benches/`; run them with `cargo bench`.
