//! Behaviour tests of the runtime, through its public API, against the bundled demo server
//! (as a real child process where the behaviour is about processes, in memory elsewhere).

mod support;

mod cancellation;
mod catalogue;
mod correlation;
mod deadlines;
mod disconnect;
mod era;
mod fail_fast;
mod handshake;
mod io_runtime;
mod late_tools;
mod legacy_fallback;
mod list_ttl;
mod listen;
mod liveness;
mod load;
mod metrics;
mod processes;
mod restarting_server_keeps_its_entries;
#[cfg(feature = "semantic")]
mod semantic_search;
mod server_features;
mod skills;
mod skipped_frames;
mod supervision;
mod tasks;
mod unreachable_server_is_tried_again;
