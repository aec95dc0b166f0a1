//! A progress bar on stderr while a call's `notifications/progress` arrive, when stderr is a
//! terminal; nothing otherwise (and no progress token is sent then).
//!
//! ```text
//! [########------------]  40% 4/10 indexing src/
//! 7 step 7
//! ```
//!
//! The line is redrawn in place and erased when the call ends, so that only the answer stays.

use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Mutex};

use switchboard::Call;

/// The width of the bar, in cells.
const WIDTH: usize = 20;

/// The longest message shown, in characters.
const MESSAGE_CHARS: usize = 48;

/// Erases the current terminal line.
const ERASE: &str = "\r\x1b[2K";

/// The bar of one call; [`finish`](Self::finish) it when the call is over.
#[derive(Debug)]
pub(crate) struct Bar(Option<Arc<Mutex<Line>>>);

#[derive(Debug, Default)]
struct Line {
    drawn: bool,
    finished: bool,
}

/// Makes `call` draw a progress bar, if stderr is a terminal.
pub(crate) fn attach(call: Call) -> (Call, Bar) {
    if !std::io::stderr().is_terminal() {
        return (call, Bar(None));
    }
    let line = Arc::new(Mutex::new(Line::default()));
    let shared = line.clone();
    // Runs on the runtime's actor thread: one short write to the terminal.
    let call = call.on_progress(move |p| {
        let Ok(mut line) = shared.lock() else { return };
        if line.finished {
            return;
        }
        let text = render(p.progress, p.total, p.message.as_deref());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{ERASE}{text}").and_then(|()| err.flush());
        line.drawn = true;
    });
    (call, Bar(Some(line)))
}

impl Bar {
    /// Erases the bar, if it was drawn; later notifications draw nothing.
    pub(crate) fn finish(self) {
        let Some(line) = self.0 else { return };
        let Ok(mut line) = line.lock() else { return };
        line.finished = true;
        if line.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE}").and_then(|()| err.flush());
        }
    }
}

/// One line of progress: a bar and a percentage when the total is known, then the counts and
/// the message (cut to [`MESSAGE_CHARS`]).
fn render(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut out = match total.filter(|t| t.is_finite() && *t > 0.0) {
        Some(total) => {
            let ratio = (progress / total).clamp(0.0, 1.0);
            let filled = (ratio * WIDTH as f64).round() as usize;
            format!(
                "[{}{}] {:>3}% {progress}/{total}",
                "#".repeat(filled),
                "-".repeat(WIDTH - filled),
                (ratio * 100.0).round() as u32
            )
        }
        None => format!("{progress}"),
    };
    if let Some(message) = message.map(|m| m.lines().next().unwrap_or("").trim()) {
        if !message.is_empty() {
            out.push(' ');
            if message.chars().count() > MESSAGE_CHARS {
                out.extend(message.chars().take(MESSAGE_CHARS - 1));
                out.push('…');
            } else {
                out.push_str(message);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_a_total() {
        assert_eq!(
            render(4.0, Some(10.0), Some("indexing src/")),
            "[########------------]  40% 4/10 indexing src/"
        );
        assert_eq!(
            render(12.0, Some(10.0), None),
            "[####################] 100% 12/10"
        );
        assert_eq!(
            render(0.5, Some(2.0), Some("")),
            "[#####---------------]  25% 0.5/2"
        );
    }

    #[test]
    fn without_a_total() {
        assert_eq!(render(7.0, None, Some("step 7\nmore")), "7 step 7");
        assert_eq!(render(3.0, Some(0.0), None), "3");
        let long = "x".repeat(100);
        let line = render(1.0, None, Some(&long));
        assert_eq!(line.chars().count(), 2 + MESSAGE_CHARS);
        assert!(line.ends_with('…'));
    }
}
