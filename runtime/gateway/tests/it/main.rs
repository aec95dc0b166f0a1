//! The gateway in process: a Switchboard runtime (the front client) talks to a `Gateway`
//! over an in-memory line stream, and the gateway's own runtime runs the demo server in
//! memory too. The real processes (`switchboard serve`, a demo server that crashes) are the
//! CLI's tests.

mod asks;
mod forwarding;
mod front_metrics;
mod support;
mod trace;
