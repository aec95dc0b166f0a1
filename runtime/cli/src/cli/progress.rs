//! A progress bar on stderr while a call's `notifications/progress` arrive, when stderr is a
//! terminal; nothing otherwise (and no progress token is sent then).
//!
//! ```text
//! [########------------]  40% 4/10 indexing src/
//! 7 step 7
//! ```
//!
//! The line is redrawn in place and erased when the call ends, so that only the answer stays.
//!
//! The call's progress callback runs on a runtime thread, beside the servers' I/O, so it only
//! replaces the latest [`Progress`] in a `watch` channel, which never waits for anyone; a CLI
//! task draws it. A terminal that stops reading (Ctrl-S, a full pipe) then stalls only that
//! task (its writes go through tokio's blocking pool), and notifications that arrive
//! meanwhile are coalesced into the latest. What a server writes in its message is shown
//! with control characters escaped, so it cannot move the cursor or reconfigure the terminal.
//! While a server's form is asked on the terminal ([`pause`]), the bar draws nothing.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use switchboard::{Call, Progress};

/// The width of the bar, in cells.
const WIDTH: usize = 20;

/// The longest message shown, in characters (after escaping).
const MESSAGE_CHARS: usize = 48;

/// Erases the current terminal line.
pub(crate) const ERASE: &str = "\r\x1b[2K";

/// Set while a form is asked on the terminal ([`super::elicit`]): bars draw nothing
/// meanwhile, so that a progress update cannot overwrite a question.
static PAUSED: AtomicBool = AtomicBool::new(false);

/// Pauses every bar until the guard is dropped; the next update after that draws again.
pub(crate) fn pause() -> Paused {
    PAUSED.store(true, Ordering::Relaxed);
    Paused(())
}

/// Bars are paused while this lives.
#[derive(Debug)]
pub(crate) struct Paused(());

impl Drop for Paused {
    fn drop(&mut self) {
        PAUSED.store(false, Ordering::Relaxed);
    }
}

/// The bar of one call; [`finish`](Self::finish) it when the call is over.
///
/// # Drop behavior
///
/// Dropped unfinished, the bar's task still erases the line, but nobody waits for it.
#[derive(Debug)]
pub(crate) struct Bar(Option<Drawer>);

#[derive(Debug)]
struct Drawer {
    done: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// Makes `call` show a progress bar, if stderr is a terminal. Must be called within the
/// CLI's tokio runtime, where the bar's task runs.
pub(crate) fn attach(call: Call) -> (Call, Bar) {
    if !std::io::stderr().is_terminal() {
        return (call, Bar(None));
    }
    let (latest, updates) = watch::channel(None);
    // Runs on a runtime thread: replaces the value under a lock held only for that.
    let call = call.on_progress(move |progress| {
        latest.send_replace(Some(Latest::from(progress)));
    });
    let (done, finished) = oneshot::channel();
    let task = tokio::spawn(draw(updates, finished, tokio::io::stderr()));
    (call, Bar(Some(Drawer { done, task })))
}

/// The latest progress of the call, as the callback hands it to the bar's task.
#[derive(Debug, Clone, PartialEq)]
struct Latest {
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
}

impl From<Progress> for Latest {
    fn from(progress: Progress) -> Self {
        let Progress {
            progress,
            total,
            message,
            ..
        } = progress;
        Latest {
            progress,
            total,
            message,
        }
    }
}

impl Bar {
    /// Stops drawing and waits until the bar is erased, if it was drawn, so that what is
    /// printed next starts on a clean line.
    pub(crate) async fn finish(self) {
        let Some(drawer) = self.0 else { return };
        let _ = drawer.done.send(());
        let _ = drawer.task.await;
    }
}

/// Draws each latest progress until `finished` fires (or its sender is dropped), then erases
/// the line if anything was drawn.
async fn draw(
    mut updates: watch::Receiver<Option<Latest>>,
    mut finished: oneshot::Receiver<()>,
    mut out: impl AsyncWrite + Unpin,
) {
    let mut drawn = false;
    loop {
        tokio::select! {
            biased;
            _ = &mut finished => break,
            changed = updates.changed() => {
                if changed.is_err() {
                    // The call and its callback are gone: nothing more will come.
                    break;
                }
                // Rendered before writing: the callback waits for this borrow, never for the
                // terminal.
                let line = updates
                    .borrow_and_update()
                    .as_ref()
                    .map(|p| render(p.progress, p.total, p.message.as_deref()));
                if let Some(line) = line.filter(|_| !PAUSED.load(Ordering::Relaxed)) {
                    drawn |= write(&mut out, &format!("{ERASE}{line}")).await;
                }
            }
        }
    }
    if drawn {
        write(&mut out, ERASE).await;
    }
}

/// Writes and flushes `text`; whether it got through. A terminal that went away is no
/// reason to fail the call.
async fn write(out: &mut (impl AsyncWrite + Unpin), text: &str) -> bool {
    out.write_all(text.as_bytes()).await.is_ok() && out.flush().await.is_ok()
}

/// One line of progress: a bar and a percentage when the total is known, then the counts and
/// the message's first line, with control characters escaped, cut to [`MESSAGE_CHARS`].
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
    let message = message
        .and_then(|m| m.lines().next())
        .map(str::trim)
        .unwrap_or("");
    if !message.is_empty() {
        let shown = super::print::escape_line(message);
        out.push(' ');
        if shown.chars().count() > MESSAGE_CHARS {
            out.extend(shown.chars().take(MESSAGE_CHARS - 1));
            out.push('…');
        } else {
            out.push_str(&shown);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

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

    #[test]
    fn control_characters_in_messages_are_escaped() {
        // Clear the screen, move the cursor home, return to the line's start, ring the bell,
        // and a C1 control (CSI): none of them reaches the terminal.
        let line = render(
            1.0,
            None,
            Some("\x1b[2J\x1b[Hgot\rcha\x07 \u{9b}31m ünïcode"),
        );
        assert_eq!(line, r"1 \u{1b}[2J\u{1b}[Hgot\rcha\u{7} \u{9b}31m ünïcode");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        // Tabs too; only the first line is shown.
        assert_eq!(render(2.0, None, Some("a\tb\nc")), r"2 a\tb");
    }

    /// Progress `n`, with the message `step n`.
    fn step(n: u32) -> Option<Latest> {
        Some(Latest {
            progress: n.into(),
            total: None,
            message: Some(format!("step {n}")),
        })
    }

    /// Reads exactly `text` from the terminal's end.
    async fn expect(terminal: &mut tokio::io::DuplexStream, text: &str) {
        let mut seen = vec![0; text.len()];
        terminal.read_exact(&mut seen).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&seen), text);
    }

    #[tokio::test]
    async fn a_stalled_terminal_stalls_only_the_bar_which_draws_the_latest() {
        // A terminal that takes 8 bytes and then stops reading, as after Ctrl-S.
        let (out, mut terminal) = tokio::io::duplex(8);
        let (latest, updates) = watch::channel(None);
        let (done, finished) = oneshot::channel();
        let task = tokio::spawn(draw(updates, finished, out));
        latest.send_replace(step(1));
        let first = format!("{ERASE}1 step 1");
        expect(&mut terminal, &first[..8]).await;
        // The task is stuck writing the rest; the sender (the progress callback) is not.
        for n in 2..=100 {
            latest.send_replace(step(n));
        }
        // Once the terminal reads again, the bar jumps to the latest: 2 to 99 are skipped.
        expect(&mut terminal, &first[8..]).await;
        expect(&mut terminal, &format!("{ERASE}100 step 100")).await;
        // Finishing erases the line, and the task ends.
        let _ = done.send(());
        task.await.unwrap();
        let mut rest = String::new();
        terminal.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, ERASE);
    }

    #[tokio::test]
    async fn nothing_drawn_nothing_erased() {
        let (out, mut terminal) = tokio::io::duplex(64);
        let (_latest, updates) = watch::channel(None);
        let (done, finished) = oneshot::channel();
        let task = tokio::spawn(draw(updates, finished, out));
        let _ = done.send(());
        task.await.unwrap();
        let mut rest = String::new();
        terminal.read_to_string(&mut rest).await.unwrap();
        assert_eq!(rest, "");
    }
}
