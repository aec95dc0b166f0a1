//! The README's command-line examples that need nothing outside the repository (those run
//! against `-- switchboard demo-server`) work as shown: each exits 0, and prints what its
//! comment says it prints; from a checkout too, where `switchboard` is not on `PATH` and
//! `cargo run --release -- ARGS` runs them.

use std::path::PathBuf;

use crate::cli::{stderr, stdout, switchboard, Temp};

/// The lines of the README's `## The command line` shell block.
fn examples() -> Vec<String> {
    shell_block("The command line")
}

/// The lines of the first shell block of the README's section `## {title}`.
fn shell_block(title: &str) -> Vec<String> {
    let readme = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(&readme).expect("the README");
    let section = text
        .split(&format!("\n## {title}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("a `## {title}` section"));
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("a shell block");
    block.lines().map(str::to_owned).collect()
}

/// A line's words, as a shell splits them (single quotes only, as the README writes them),
/// and its comment.
fn words(line: &str) -> (Vec<String>, Option<String>) {
    let (command, comment) = match line.split_once(" #") {
        Some((command, comment)) => (command, Some(comment.trim().to_owned())),
        None => (line, None),
    };
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in command.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    (words, comment)
}

#[test]
fn the_readmes_examples_against_the_demo_server_work_as_shown() {
    // As from a checkout: the command is this binary run directly (`cargo run --release --`
    // does that), and the server `switchboard` is not on PATH.
    let empty = Temp::dir("readme-path");
    let mut ran = 0;
    for line in examples() {
        if !line.starts_with("switchboard ") || !line.contains("-- switchboard demo-server") {
            continue;
        }
        let (words, comment) = words(&line);
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let output = crate::cli::command(&args)
            .env("PATH", &empty.0)
            .output()
            .expect("run switchboard");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{line}: stderr: {}",
            stderr(&output)
        );
        if let Some(shown) = comment {
            assert!(
                stdout(&output).contains(&shown),
                "{line}: {}",
                stdout(&output)
            );
        }
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} examples found");
}

/// The Gateway section's commands need a config file and run until interrupted: each is
/// checked to be a valid command line (asked for its help, clap checks every argument first).
#[test]
fn the_readmes_gateway_commands_are_valid_command_lines() {
    let mut checked = 0;
    for line in shell_block("Gateway") {
        let (words, _) = words(&line);
        assert_eq!(
            words.first().map(String::as_str),
            Some("switchboard"),
            "{line}"
        );
        let mut args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        args.push("--help");
        let output = switchboard(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{line}: stderr: {}",
            stderr(&output)
        );
        assert!(stdout(&output).contains("--listen"), "{line}");
        checked += 1;
    }
    assert_eq!(checked, 5);
}
