//! The guardian: a small shell that kills this process's servers when this process ends,
//! however it ends (exit, crash, `SIGKILL`).
//!
//! Linux's `PR_SET_PDEATHSIG` does that per child, but it must be set between `fork` and
//! `exec`, and a `pre_exec` hook makes std start every server with `fork` instead of
//! `posix_spawn`. In a process of many threads and much memory each start then cost
//! milliseconds and left every page copy-on-write, which all the other threads paid in page
//! faults: one server crash-looping beside nine healthy ones moved their p99 by 1.5–1.85×
//! (benches/HISTORY.md). The signal also follows the *thread* that started the child, not the
//! process.
//!
//! So one guardian per process, started once (with `posix_spawn`, in a process group of its
//! own, so that no terminal's signal and no group kill meant for us reaches it), reads lines
//! on its stdin: `+PGID` to watch a server's process group, `-PGID` once the group is known
//! to be empty. The write end of that pipe is ours alone; the kernel closes it when this
//! process ends, and the guardian, at end of input, sends `SIGKILL` to every group still on
//! its list, then exits. Where it cannot be started (no `/bin/sh`), servers get the
//! parent-death signal as before.
//!
//! Two windows remain, both far narrower than a thread's life: a server started but not yet
//! on the list when this process dies is not killed, and a group released a moment after it
//! emptied could, were this process to die in that moment and its id to be reused at once,
//! be signalled stale.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The guardian's `argv[0]`, as `ps` shows it: a child of this process by that name is not
/// a server.
pub const NAME: &str = "switchboard-guardian";

/// What the guardian runs: a POSIX shell loop of builtins only.
const SCRIPT: &str = r#"trap '' INT HUP TERM QUIT
groups=' '
while IFS= read -r line; do
  case $line in
    +*) groups="$groups${line#+} " ;;
    -*) g=${line#-}
        case $groups in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac ;;
  esac
done
for g in $groups; do kill -s KILL -- "-$g" 2>/dev/null; done
"#;

/// A running guardian: the shell and the write end of its input.
#[derive(Debug)]
struct Guardian {
    child: Child,
    stdin: ChildStdin,
}

impl Guardian {
    /// Starts one.
    fn start() -> io::Result<Guardian> {
        let mut child = Command::new("/bin/sh")
            // What `ps` shows, so that whoever lists our children can tell it from a server.
            .arg0(NAME)
            .args(["-c", SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()?;
        let Some(stdin) = child.stdin.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the guardian's stdin is missing"));
        };
        // A guardian that stops reading (stopped by a debugger, say) must not block a
        // server's start: a full pipe fails the write, and a new guardian takes over. The
        // pipe is ours alone, so its flags are too.
        // SAFETY: fcntl on a descriptor we own, with no pointer arguments.
        let nonblocking = unsafe {
            let fd = stdin.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags != -1 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) != -1
        };
        let mut guardian = Guardian { child, stdin };
        if !nonblocking {
            let error = io::Error::last_os_error();
            guardian.stop();
            return Err(error);
        }
        Ok(guardian)
    }

    /// Sends one line: `+PGID` or `-PGID`.
    fn tell(&mut self, sign: char, pgid: libc::pid_t) -> io::Result<()> {
        writeln!(self.stdin, "{sign}{pgid}")
    }

    /// Kills a guardian that cannot be told any more. A live guardian is never just dropped:
    /// the end of its input would make it kill every group it was told of.
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether it still runs (reaping it if not).
    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// The groups to kill should this process end, and the guardian told of them.
#[derive(Debug)]
struct Watch {
    guardian: Option<Guardian>,
    groups: BTreeSet<libc::pid_t>,
}

impl Watch {
    const fn new() -> Watch {
        Watch {
            guardian: None,
            groups: BTreeSet::new(),
        }
    }

    /// The running guardian: the one there is, or a new one told of every group.
    fn guardian(&mut self) -> Option<&mut Guardian> {
        if self.guardian.as_mut().is_some_and(Guardian::alive) {
            return self.guardian.as_mut();
        }
        self.guardian = None;
        let mut guardian = match Guardian::start() {
            Ok(guardian) => guardian,
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the guardian that kills servers if this process dies");
                return None;
            }
        };
        if self
            .groups
            .iter()
            .any(|&pgid| guardian.tell('+', pgid).is_err())
        {
            guardian.stop();
            return None;
        }
        Some(self.guardian.insert(guardian))
    }

    fn watch(&mut self, pgid: libc::pid_t) {
        self.groups.insert(pgid);
        let Some(guardian) = self.guardian() else {
            return;
        };
        if guardian.tell('+', pgid).is_err() {
            // It died since we looked, or stopped reading: a new one is told every group,
            // this one included.
            guardian.stop();
            self.guardian();
        }
    }

    fn release(&mut self, pgid: libc::pid_t) {
        self.groups.remove(&pgid);
        if let Some(guardian) = self.guardian.as_mut() {
            if guardian.tell('-', pgid).is_err() {
                // A new one starts, told every group but this one, on the next use.
                guardian.stop();
            }
        }
    }
}

/// This process's groups and guardian, started on first use. Locked only to start a server
/// or to release one, never on a message's path.
static WATCH: Mutex<Watch> = Mutex::new(Watch::new());

fn locked() -> std::sync::MutexGuard<'static, Watch> {
    WATCH.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a guardian runs (starting one, or a new one if it died): when it does not, the
/// caller must protect its servers some other way.
pub(super) fn available() -> bool {
    locked().guardian().is_some()
}

/// Puts `pgid` on the guardian's list: it is killed if this process ends first.
pub(super) fn watch(pgid: libc::pid_t) {
    locked().watch(pgid);
}

/// Takes `pgid` off the guardian's list: its group is empty, and its id may be reused.
pub(super) fn release(pgid: libc::pid_t) {
    locked().release(pgid);
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A `sleep` leading a process group of its own, as a server is started.
    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    }

    fn gone_within(child: &mut Child, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// Ends a watch's guardian as this process's end would: its input closes.
    fn end(watch: &mut Watch) -> std::process::ExitStatus {
        let Guardian { mut child, stdin } = watch.guardian.take().expect("a guardian");
        drop(stdin);
        child.wait().expect("the guardian ends")
    }

    fn id(child: &Child) -> libc::pid_t {
        libc::pid_t::try_from(child.id()).unwrap()
    }

    #[test]
    fn at_the_end_of_its_input_it_kills_the_groups_still_watched() {
        let mut watch = Watch::new();
        let (mut watched, mut released) = (sleeper(), sleeper());
        watch.watch(id(&watched));
        watch.watch(id(&released));
        // A group whose id is a prefix of another's must not take the other off the list.
        watch.watch(id(&watched) * 10 + 9);
        watch.release(id(&watched) * 10 + 9);
        watch.release(id(&released));
        assert!(!gone_within(&mut watched, Duration::from_millis(200)));
        let status = end(&mut watch);
        assert!(status.success(), "{status}");
        assert!(
            gone_within(&mut watched, Duration::from_secs(5)),
            "the watched group lives on"
        );
        assert!(
            !gone_within(&mut released, Duration::from_millis(200)),
            "a released group was killed"
        );
        released.kill().unwrap();
        released.wait().unwrap();
    }

    #[test]
    fn a_guardian_that_died_is_replaced_and_told_every_group() {
        let mut watch = Watch::new();
        let mut server = sleeper();
        watch.watch(id(&server));
        watch.guardian.as_mut().expect("a guardian").stop();
        assert!(watch.guardian().is_some(), "a new guardian");
        let status = end(&mut watch);
        assert!(status.success(), "{status}");
        assert!(
            gone_within(&mut server, Duration::from_secs(5)),
            "the new guardian did not know the group"
        );
    }
}
