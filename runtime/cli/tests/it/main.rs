//! The `switchboard` command line, run as a real process: against the bundled demo server
//! (the binary doubles as it), config files, OAuth logins, and servers nobody here wrote.

mod cli;
mod cli_auth;
mod cli_features;
mod cli_interop;
mod cli_semantic;
mod cli_skills;
mod cli_tasks;
mod cli_user;
mod exits_right_after_a_timeout_or_a_signal;
mod gateway;
mod gateway_audit;
mod gateway_auth;
mod gateway_client_values;
mod gateway_discovery;
mod gateway_isolation;
mod gateway_per_user;
mod gateway_reload;
mod gateway_skills;
mod gateway_token_exchange;
mod hints_run_where_they_are_printed;
// Read the gateway's descriptors and memory in /proc.
#[cfg(target_os = "linux")]
mod gateway_faults;
#[cfg(target_os = "linux")]
mod gateway_hostile;
#[cfg(target_os = "linux")]
mod gateway_support;
mod readme;
// `/readyz` asked with the helpers of `gateway_support`.
#[cfg(target_os = "linux")]
mod readyz_waits_for_required_servers;
mod replicas;
mod serve_passes_instructions_on;
mod serve_tells_its_operator;
mod timeout_caps_the_start;

/// Whether `pid` is the guardian the stdio transport starts beside the servers (it kills
/// them should the process die; it ends on its own once the process has).
pub(crate) fn is_guardian(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).next() == Some(b"switchboard-guardian"))
}

/// Whether a process is gone (no such pid, or a zombie nobody reaped yet).
pub(crate) fn process_is_gone(pid: u32) -> bool {
    if unsafe { libc::kill(pid as i32, 0) } != 0 {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => !cfg!(target_os = "linux"),
    }
}
