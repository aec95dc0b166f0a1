//! A server the transport could not reach, asked again when a call wants it: which failed
//! starts are connection-level, and how soon a call may have the actor try again ahead of
//! the backoff's schedule (a circuit breaker's half-open state).
//!
//! A server that could not be reached (its HTTP connection refused, its name not resolved,
//! a handshake answer the network reset) may be back at any moment — a rolling restart, a
//! redeploy — while the backoff's next retry may be seconds away. So a call made meanwhile
//! wakes the actor, which starts an attempt at once (or as soon as [`SPACING`] allows), and
//! the call waits for that attempt within its own deadline, failing only if an attempt
//! begun after it was made fails. A server that was reached and failed (its command could
//! not be spawned, its process exited, it refused the handshake) gains nothing from being
//! asked sooner: calls fail at once while it is retried on schedule, as before.
//!
//! An early attempt is an attempt like any other (counted in the status's `restarts`, its
//! failure the gate's and the status's last error; its success ends the backoff as any
//! successful start does), except for the crash-loop guard and the schedule: one that fails
//! before the retry it ran ahead of fell due leaves the schedule as it was. Callers knock as
//! often as they call; counting each knock's failure in the crash-loop window would have a
//! server given up for good (its tools gone) after five knocks, 1.25 s into an outage under
//! steady traffic, where the schedule alone gives it some 8 s. An early attempt still
//! running when the retry fell due took that retry's place, and counts as it would have.

use std::time::{Duration, Instant};

use switchboard_transports::CloseCause;

use crate::error::{Error, ErrorKind};

/// How soon after an attempt began a call may have another one started.
///
/// Half the default first delay of the backoff (500 ms): a call that comes just after an
/// attempt failed waits no longer for a fresh one than the first retry would have made it
/// wait; however many calls knock, a server is asked at most four times a second (a refused
/// connection costs it nothing, a successful one is one handshake), and a failed start's
/// warning is logged at most as often.
pub(super) const SPACING: Duration = Duration::from_millis(250);

/// When the last attempt to start the server began: the bound on early attempts.
#[derive(Debug, Default)]
pub(super) struct HalfOpen {
    last: Option<Instant>,
}

impl HalfOpen {
    /// An attempt (the backoff's or an early one) began `at`.
    pub(super) fn attempted(&mut self, at: Instant) {
        self.last = Some(at);
    }

    /// A call knocked at `now` while the backoff's next retry is due at `due`: when an early
    /// attempt may begin (`now`, or [`SPACING`] after the last attempt began), or `None`
    /// when the retry due comes no later.
    pub(super) fn early_at(&self, now: Instant, due: Instant) -> Option<Instant> {
        let earliest = match self.last {
            Some(last) => (last + SPACING).max(now),
            None => now,
        };
        (earliest < due).then_some(earliest)
    }

    /// Whether an early attempt that failed at `now`, ahead of the retry due at `due`,
    /// counts as the backoff's failure: only when the retry fell due while it ran.
    pub(super) fn counts(now: Instant, due: Instant) -> bool {
        now >= due
    }
}

/// Whether a failed start is connection-level: the transport could not reach the server at
/// all. `error` is the start's error; `over_http` whether the server is spoken to over HTTP;
/// `unreachable` whether the connection's transport reported a request it could not deliver
/// for want of the server (see [`Table::found_unreachable`](crate::call_table::Table::found_unreachable)).
///
/// Connection-level: the HTTP transport could not connect (refused, a name that does not
/// resolve, no connection within its connect timeout) or lost the server during the
/// handshake (a reset or cut-off answer, an event stream that ended). Not: a spawn error, a
/// process that exited (stdio's write failures are that), a handshake refused or timed out,
/// credentials refused.
pub(super) fn could_not_reach(error: &Error, over_http: bool, unreachable: bool) -> bool {
    if unreachable {
        return true;
    }
    match error.kind() {
        ErrorKind::Spawn { source } => opening_could_not_reach(source.as_ref()),
        ErrorKind::Handshake {
            cause: Some(cause), ..
        } => match cause.kind() {
            ErrorKind::StreamBroken { .. } => over_http,
            ErrorKind::Disconnected { reason } => lost_the_server(&reason.cause, over_http, false),
            _ => false,
        },
        _ => false,
    }
}

/// Whether a connection that ended with `cause` ended because the transport lost the server
/// (`over_http`, `unreachable` as for [`could_not_reach`]): Streamable HTTP ends a connection
/// with a failed write when a POST cannot connect at all, a legacy HTTP+SSE one when the
/// server ends its event stream. A stdio server's failed write or closed output is a
/// process that went away: not.
pub(super) fn lost_the_server(cause: &CloseCause, over_http: bool, unreachable: bool) -> bool {
    unreachable || over_http && matches!(cause, CloseCause::WriteFailed(_) | CloseCause::Eof)
}

/// Whether the transport's error opening a connection says the server was not reached (a
/// legacy HTTP+SSE server's event stream, which is opened before any message).
fn opening_could_not_reach(source: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    #[cfg(feature = "http")]
    {
        use switchboard_transports::http;
        matches!(
            source.downcast_ref::<http::Error>(),
            Some(http::Error::Connect { .. } | http::Error::Request { .. })
        )
    }
    #[cfg(not(feature = "http"))]
    {
        let _ = source;
        false
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use switchboard_transports::CloseReason;

    use super::*;
    use crate::error::ErrorContext;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_knock_with_no_attempt_before_starts_one_at_once() {
        let now = Instant::now();
        assert_eq!(HalfOpen::default().early_at(now, now + 500 * MS), Some(now));
    }

    #[test]
    fn knocks_start_attempts_no_closer_than_the_spacing() {
        let t = Instant::now();
        let mut half_open = HalfOpen::default();
        half_open.attempted(t);
        // Right after an attempt began: the next one waits for the spacing.
        assert_eq!(
            half_open.early_at(t + 10 * MS, t + 4000 * MS),
            Some(t + SPACING)
        );
        assert_eq!(
            half_open.early_at(t + SPACING - MS, t + 4000 * MS),
            Some(t + SPACING)
        );
        // Past the spacing: at once.
        let later = t + SPACING + 100 * MS;
        assert_eq!(half_open.early_at(later, t + 4000 * MS), Some(later));
        // However many calls knock, attempts stay the spacing apart.
        let mut starts = vec![t];
        let mut now = t;
        while now < t + 2000 * MS {
            if let Some(at) = half_open.early_at(now, t + 60_000 * MS) {
                if at == now {
                    half_open.attempted(now);
                    starts.push(now);
                }
            }
            now += MS;
        }
        assert!(
            starts.windows(2).all(|w| w[1] - w[0] >= SPACING),
            "{starts:?}"
        );
        // At 0, 250, …, 1750 ms: a knock every millisecond for 2 s starts eight.
        assert_eq!(starts.len(), 8, "{starts:?}");
    }

    #[test]
    fn a_retry_due_no_later_than_the_early_attempt_takes_its_place() {
        let t = Instant::now();
        let mut half_open = HalfOpen::default();
        half_open.attempted(t);
        assert_eq!(half_open.early_at(t + 10 * MS, t + 200 * MS), None);
        assert_eq!(half_open.early_at(t + 10 * MS, t + SPACING), None);
        assert_eq!(half_open.early_at(t + 300 * MS, t + 300 * MS), None);
    }

    #[test]
    fn an_early_failure_counts_only_once_the_retry_it_ran_ahead_of_was_due() {
        let t = Instant::now();
        assert!(!HalfOpen::counts(t, t + MS));
        assert!(HalfOpen::counts(t + MS, t + MS));
        assert!(HalfOpen::counts(t + 2 * MS, t + MS));
    }

    fn handshake(cause: Error) -> Error {
        ErrorContext::of_server("s".into()).error(ErrorKind::Handshake {
            detail: "initialize was refused".into(),
            cause: Some(cause),
        })
    }

    fn disconnected(cause: CloseCause) -> Error {
        handshake(
            ErrorContext::of_request("s".into(), "initialize".into(), None).error(
                ErrorKind::Disconnected {
                    reason: Arc::new(CloseReason {
                        cause,
                        stderr_tail: Vec::new(),
                    }),
                },
            ),
        )
    }

    fn spawn(source: impl std::error::Error + Send + Sync + 'static) -> Error {
        ErrorContext::of_server("s".into()).error(ErrorKind::Spawn {
            source: Arc::new(source),
        })
    }

    #[test]
    fn a_request_the_transport_could_not_deliver_is_connection_level() {
        let refused = handshake(
            ErrorContext::of_request("s".into(), "initialize".into(), None).error(
                ErrorKind::Transport {
                    reason: "s: cannot connect to http://127.0.0.1:1/mcp: connection refused"
                        .into(),
                },
            ),
        );
        assert!(could_not_reach(&refused, true, true));
        // The same words from a server that answered (an HTTP error status) are not.
        assert!(!could_not_reach(&refused, true, false));
    }

    #[test]
    fn an_http_connection_lost_during_the_handshake_is_connection_level() {
        let failed = CloseCause::WriteFailed("cannot connect".into());
        assert!(could_not_reach(&disconnected(failed.clone()), true, false));
        assert!(could_not_reach(&disconnected(CloseCause::Eof), true, false));
        let reset = handshake(
            ErrorContext::of_request("s".into(), "server/discover".into(), None).error(
                ErrorKind::StreamBroken {
                    reason: "connection reset".into(),
                },
            ),
        );
        assert!(could_not_reach(&reset, true, false));
        // Over stdio a failed write or an EOF is a process that went away: not.
        assert!(!could_not_reach(&disconnected(failed), false, false));
        assert!(!could_not_reach(
            &disconnected(CloseCause::Eof),
            false,
            false
        ));
    }

    #[test]
    fn a_connection_the_transport_lost_is_connection_level_over_http_only() {
        let refused = CloseCause::WriteFailed("cannot connect".into());
        assert!(lost_the_server(&refused, true, false));
        assert!(lost_the_server(&CloseCause::Eof, true, false));
        assert!(!lost_the_server(&refused, false, false));
        let killed = CloseCause::Exited {
            code: None,
            signal: Some(9),
        };
        assert!(!lost_the_server(&killed, false, false));
        // Ours to close, or torn down: not the server's absence.
        assert!(!lost_the_server(&CloseCause::Closed, true, false));
        let stopped = CloseCause::Aborted("the server stopped responding".into());
        assert!(!lost_the_server(&stopped, true, false));
        assert!(lost_the_server(&stopped, true, true));
    }

    #[test]
    fn a_process_that_exits_or_cannot_be_spawned_is_not_connection_level() {
        let exited = disconnected(CloseCause::Exited {
            code: Some(3),
            signal: None,
        });
        assert!(!could_not_reach(&exited, false, false));
        assert!(!could_not_reach(&exited, true, false));
        let missing = spawn(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(!could_not_reach(&missing, false, false));
        let refused = ErrorContext::of_server("s".into()).error(ErrorKind::Handshake {
            detail: "initialize was refused: no clients today".into(),
            cause: None,
        });
        assert!(!could_not_reach(&refused, true, false));
        let unauthorized = ErrorContext::of_server("s".into()).error(ErrorKind::Unauthorized {
            resource_metadata: None,
        });
        assert!(!could_not_reach(&unauthorized, true, false));
    }

    #[cfg(feature = "http")]
    #[test]
    fn an_event_stream_that_could_not_be_opened_is_connection_level() {
        use switchboard_transports::http;
        let connect = spawn(http::Error::Connect {
            server: "s".into(),
            url: "http://127.0.0.1:1/sse".into(),
            reason: "connection refused".into(),
        });
        assert!(could_not_reach(&connect, true, false));
        let reset = spawn(http::Error::Request {
            server: "s".into(),
            url: "http://127.0.0.1:1/sse".into(),
            reason: "connection reset".into(),
        });
        assert!(could_not_reach(&reset, true, false));
        let status = spawn(http::Error::Http {
            server: "s".into(),
            url: "http://127.0.0.1:1/sse".into(),
            status: 503,
        });
        assert!(!could_not_reach(&status, true, false));
    }
}
