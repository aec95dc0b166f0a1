//! The control plane: one [`server::ServerActor`] per server, under one
//! [`supervisor::Supervisor`].
//!
//! The actors start, supervise, restart and describe servers, and answer the requests servers
//! send. Calls to servers never pass through them: see [`crate::exchange`].

pub(crate) mod server;
pub(crate) mod supervisor;
