//! The README's server: two tools and a resource, over stdio. `server.rs` is the code exactly
//! as the README shows it (a test checks), kept whole there, without this doc comment that the
//! workspace's lints want of an example.
include!("server.rs");
