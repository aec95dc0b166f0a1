//! This program as the user can run it: how a hint spells it, and what `switchboard` after
//! `--` starts when no program of that name is on `PATH`.
//!
//! From a checkout (`cargo run --release -- demo`), or from a binary that was never
//! installed, `switchboard` is no command the shell knows, and a hint that says `switchboard
//! tools …` fails as printed. So hints spell this program as the shell will find it
//! ([`hint`]): `switchboard` when that name on `PATH` is this very program, else its path
//! (relative to the current directory when it lies below it, as `target/release/switchboard`
//! does in a checkout). And a server command `switchboard …` after `--` is this program when
//! the server's `PATH` has none ([`resolve`]), so that the README's `-- switchboard
//! demo-server` works from a checkout through `cargo run --release --` too.
//!
//! ```text
//! $ cargo run --release -- demo
//! …
//!   … and 19 more fault tools (`target/release/switchboard tools -- target/release/switchboard demo-server --faults`)
//! ```

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The program's name, as `cargo install` puts it on `PATH`.
const NAME: &str = "switchboard";

/// This program, spelled for a hint the user may paste into a shell where they are: see the
/// module's documentation. `switchboard` when the path of this program is unknown.
pub(crate) fn hint() -> &'static str {
    static HINT: OnceLock<String> = OnceLock::new();
    HINT.get_or_init(|| {
        let Ok(exe) = std::env::current_exe() else {
            return NAME.to_owned();
        };
        let path = std::env::var_os("PATH");
        let found = find(NAME, path.as_deref());
        let cwd = std::env::current_dir().ok();
        spell(&exe, found.as_deref(), cwd.as_deref())
    })
}

/// The program a server command `program` given after `--` starts: this one when `program`
/// is `switchboard` and `path` (the `PATH` the server is started with) has no program of
/// that name, where starting it would fail; `None` (the program as it is) otherwise.
pub(crate) fn resolve(program: &OsStr, path: Option<&OsStr>) -> Option<PathBuf> {
    if program != NAME || find(NAME, path).is_some() {
        return None;
    }
    std::env::current_exe().ok()
}

/// The program `name` as a shell finds it on `path` (a `PATH` value; unset is the shell's
/// default, `/bin:/usr/bin`): the first executable file of that name.
fn find(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    let path = path.unwrap_or(OsStr::new("/bin:/usr/bin"));
    std::env::split_paths(path)
        .map(|dir| {
            // An empty entry is the current directory, to a shell.
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            dir.join(name)
        })
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How a shell in `cwd` runs `exe`, when `on_path` is what the name `switchboard` finds on
/// `PATH`: the name if it finds this very file, else the path (relative below `cwd`),
/// quoted for the shell where it needs to be.
fn spell(exe: &Path, on_path: Option<&Path>, cwd: Option<&Path>) -> String {
    let same = |found: &Path| match (found.canonicalize(), exe.canonicalize()) {
        (Ok(found), Ok(exe)) => found == exe,
        _ => found == exe,
    };
    if on_path.is_some_and(same) {
        return NAME.to_owned();
    }
    let relative = cwd
        .and_then(|cwd| exe.strip_prefix(cwd).ok())
        .filter(|relative| !relative.as_os_str().is_empty());
    let path = match relative {
        // A word without a slash is looked up on PATH: `./switchboard` is this file.
        Some(relative) if relative.parent() == Some(Path::new("")) => Path::new(".").join(relative),
        Some(relative) => relative.to_owned(),
        None => exe.to_owned(),
    };
    quote(&path.to_string_lossy())
}

/// `word` as one word to a POSIX shell: as it is when it holds nothing a shell reads
/// specially, else in single quotes.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of this test's own, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir =
                std::env::temp_dir().join(format!("sb-program-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }

        /// A file `name` in it, executable or not.
        fn file(&self, name: &str, executable: bool) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            let mode = if executable { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_hint_names_the_program_as_the_shell_finds_it() {
        let dir = Dir::new("spell");
        let exe = dir.file("switchboard", true);
        let other = Dir::new("spell-other");
        let installed = other.file("switchboard", true);
        // On PATH, this very file (through a symlink too): its name.
        assert_eq!(spell(&exe, Some(&exe), None), "switchboard");
        let link = other.0.join("link");
        std::os::unix::fs::symlink(&exe, &link).unwrap();
        assert_eq!(spell(&exe, Some(&link), None), "switchboard");
        // Not on PATH, or another program of that name there: its path.
        let absolute = exe.to_string_lossy().into_owned();
        assert_eq!(spell(&exe, None, None), absolute);
        assert_eq!(spell(&exe, Some(&installed), None), absolute);
        // Below the current directory, relative, with a slash so that no shell looks it up.
        let checkout = dir.0.parent().unwrap();
        let below = format!(
            "{}/switchboard",
            dir.0.file_name().unwrap().to_string_lossy()
        );
        assert_eq!(spell(&exe, None, Some(checkout)), below);
        assert_eq!(spell(&exe, None, Some(&dir.0)), "./switchboard");
        assert_eq!(spell(&exe, None, Some(&other.0)), absolute);
        // Quoted where a shell would split it.
        assert_eq!(
            spell(Path::new("/my tools/switchboard"), None, None),
            "'/my tools/switchboard'"
        );
    }

    #[test]
    fn quoting_keeps_a_path_one_word() {
        assert_eq!(
            quote("target/release/switchboard"),
            "target/release/switchboard"
        );
        assert_eq!(quote("/a b/c"), "'/a b/c'");
        assert_eq!(quote("/it's"), r"'/it'\''s'");
        assert_eq!(quote("$HOME/x"), "'$HOME/x'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn the_path_is_searched_for_an_executable_file() {
        let first = Dir::new("find-first");
        let second = Dir::new("find-second");
        first.file("switchboard", false);
        let wanted = second.file("switchboard", true);
        let path = std::env::join_paths([&first.0, &second.0]).unwrap();
        assert_eq!(find(NAME, Some(&path)), Some(wanted));
        let empty = Dir::new("find-empty");
        assert_eq!(find(NAME, Some(empty.0.as_os_str())), None);
        // `switchboard` after `--` is this program only where PATH has none.
        assert_eq!(
            resolve(OsStr::new(NAME), Some(empty.0.as_os_str())),
            std::env::current_exe().ok()
        );
        assert_eq!(resolve(OsStr::new(NAME), Some(&path)), None);
        assert_eq!(resolve(OsStr::new("npx"), Some(empty.0.as_os_str())), None);
        assert_eq!(
            resolve(OsStr::new("./switchboard"), Some(empty.0.as_os_str())),
            None
        );
    }
}
