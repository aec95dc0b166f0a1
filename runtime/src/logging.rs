//! What servers log: `notifications/message` to `tracing` at the mapped level and to a
//! broadcast any caller can take, and the log level chosen for a server, re-applied after
//! every restart.
//!
//! Levels map as RFC 5424 severities to `tracing`'s: `debug` to DEBUG, `info` and `notice`
//! to INFO, `warning` to WARN, `error` and above to ERROR; the events have the target
//! `switchboard::server_log`, so a subscriber's filter can keep or drop them as a whole.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use serde_json::Value;
use switchboard_codecs::mcp::{LoggingLevel, LoggingMessageParams};
use tokio::sync::broadcast;

/// Messages kept for a slow receiver of [`ServerHandle::logs`](crate::ServerHandle::logs)
/// before it starts missing some (it is told how many).
const BACKLOG: usize = 256;

/// One message a server logged.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerLog {
    /// The server.
    pub server: Arc<str>,
    /// Its severity.
    pub level: LoggingLevel,
    /// The logger's name, if the server gave one.
    pub logger: Option<String>,
    /// The message: a string or any JSON.
    pub data: Value,
}

/// Every level, least severe first (the order of [`LoggingLevel`]).
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// One server's logging, shared by its handles and every incarnation of its actor.
#[derive(Debug)]
pub(crate) struct Logging {
    server: Arc<str>,
    /// The level set with `set_log_level`, sent again after every (re)initialization: 0 for
    /// none, else 1 + its index in [`LEVELS`]. An atomic, because every request to a
    /// stateless server reads it to put it in `_meta`.
    level: AtomicU8,
    messages: broadcast::Sender<ServerLog>,
}

impl Logging {
    pub(crate) fn new(server: Arc<str>) -> Self {
        Logging {
            server,
            level: AtomicU8::new(0),
            messages: broadcast::channel(BACKLOG).0,
        }
    }

    /// The level to (re)apply, if one was chosen.
    pub(crate) fn level(&self) -> Option<LoggingLevel> {
        let stored = usize::from(self.level.load(Ordering::Relaxed));
        stored.checked_sub(1).and_then(|i| LEVELS.get(i).copied())
    }

    pub(crate) fn set_level(&self, level: LoggingLevel) {
        let index = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        // At most 8 levels: the index always fits.
        self.level.store(index as u8 + 1, Ordering::Relaxed);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<ServerLog> {
        self.messages.subscribe()
    }

    /// A `notifications/message` from the server.
    pub(crate) fn log(&self, message: LoggingMessageParams) {
        let LoggingMessageParams {
            level,
            logger,
            data,
            ..
        } = message;
        let server = &*self.server;
        let name = logger.as_deref().unwrap_or("");
        // tracing's level is part of each event's static metadata: one macro per level.
        match tracing_level(level) {
            tracing::Level::DEBUG => {
                tracing::debug!(target: "switchboard::server_log", server, logger = name, level = ?level, data = %data)
            }
            tracing::Level::INFO => {
                tracing::info!(target: "switchboard::server_log", server, logger = name, level = ?level, data = %data)
            }
            tracing::Level::WARN => {
                tracing::warn!(target: "switchboard::server_log", server, logger = name, level = ?level, data = %data)
            }
            _ => {
                tracing::error!(target: "switchboard::server_log", server, logger = name, level = ?level, data = %data)
            }
        }
        // Nobody listening is the usual case, not an error.
        let _ = self.messages.send(ServerLog {
            server: self.server.clone(),
            level,
            logger,
            data,
        });
    }
}

/// The `tracing` level of a server's log level.
fn tracing_level(level: LoggingLevel) -> tracing::Level {
    match level {
        LoggingLevel::Debug => tracing::Level::DEBUG,
        LoggingLevel::Info | LoggingLevel::Notice => tracing::Level::INFO,
        LoggingLevel::Warning => tracing::Level::WARN,
        LoggingLevel::Error
        | LoggingLevel::Critical
        | LoggingLevel::Alert
        | LoggingLevel::Emergency => tracing::Level::ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_as_documented() {
        use LoggingLevel::*;
        let mapped: Vec<_> = [
            Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
        ]
        .into_iter()
        .map(tracing_level)
        .collect();
        use tracing::Level as L;
        assert_eq!(
            mapped,
            [
                L::DEBUG,
                L::INFO,
                L::INFO,
                L::WARN,
                L::ERROR,
                L::ERROR,
                L::ERROR,
                L::ERROR
            ]
        );
    }

    #[test]
    fn a_message_reaches_every_receiver() {
        let logging = Logging::new("s".into());
        let mut rx = logging.subscribe();
        logging.log(LoggingMessageParams {
            level: LoggingLevel::Warning,
            logger: Some("db".into()),
            data: Value::from("slow"),
            extra: Default::default(),
        });
        let got = rx.try_recv().expect("a message");
        assert_eq!(
            (got.level, got.logger.as_deref()),
            (LoggingLevel::Warning, Some("db"))
        );
        assert_eq!(got.data, Value::from("slow"));
    }

    #[test]
    fn the_chosen_level_reads_back_as_set() {
        let logging = Logging::new("s".into());
        assert_eq!(logging.level(), None);
        for level in LEVELS {
            logging.set_level(level);
            assert_eq!(logging.level(), Some(level));
        }
    }
}
