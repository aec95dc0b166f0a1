//! `switchboard serve --listen` as a real process against clients that try to knock it over
//! (issue 33): slow heads, half-sent requests past the connection cap, stalled bodies, an
//! oversized `initialize`, an `initialize` flood, answers nobody reads, a client holding
//! streams, and a rate flood.
//!
//! Each test measures the gateway's resident memory and descriptors before, during (the
//! peak) and after the attack, and a well-behaved client's calls and the health probes
//! during it. The attackers connect from 127.0.0.2 (Linux routes all of 127/8 to loopback),
//! so they are another client than the well-behaved one (127.0.0.1) and the prober
//! (127.0.0.3). Each asserts that every well-behaved call and probe succeeded with a p99
//! under a second, that memory stayed within a bound it names, that the descriptors came back
//! to their baseline once the attackers left, that the process lives, and that every refusal
//! it provoked is counted in `switchboard_front_rejected_total`. The numbers are printed.

mod answers;
mod connections;
mod harness;
mod sessions;
