//! The gateway in process: a Switchboard runtime (the front client) talks to a `Gateway`
//! over an in-memory line stream, and the gateway's own runtime runs the demo server in
//! memory too, or as this test binary's child process where the test kills it. The real
//! `switchboard serve` is the CLI's tests.

mod asks;
mod child;
mod discovery;
mod forwarding;
mod front_metrics;
mod instructions_pass_through;
mod readiness;
mod restarting_upstream;
mod skills;
mod support;
mod trace;
