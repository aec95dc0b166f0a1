//! The server side over real transports, in both eras: a client written here speaks raw
//! JSON-RPC to a `Server` over an in-process stream and over HTTP.

mod a_handler_holds_up_only_itself;
mod admission;
mod bounded_session;
mod http;
mod http_support;
mod instructions_follow_the_handler;
mod oversized_initialize_is_refused;
mod readme;
mod skills_are_served_from_a_folder;
mod stdio;
mod support;
mod typed_call_reads_its_arguments;
mod typed_input_schema_is_derived;
mod typed_resource_and_prompt_are_served;
mod typed_support;
mod typed_tools_serve_both_eras;
mod unserved_listen_ends;
