//! Property tests of the parsers: bounded runs in CI, longer ones by hand.
//!
//! Each property runs `PROPTEST_CASES` cases (256 by default); see the README's "Fuzzing the
//! parsers" for a long run.

mod prop_envelope;
mod prop_lines;
mod prop_sse;
mod support;
