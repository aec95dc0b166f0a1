//! Integration and interop tests for Switchboard live in `it/`.
