//! The demo server's skills (the Skills extension): `skill://greet-people/SKILL.md`, with a
//! supporting file, and `skill://demo/arithmetic/SKILL.md`, under a prefix, with an example file. Their files are
//! `runtime/demo/skills/`, built into the binary.
//!
//! They are served by `skills/list`, `skills/get`, `resources/directory/read` and
//! `resources/read`, but left out of `resources/list`: that list stays the three documents
//! the demo's clients (and their tests) know, and the extension asks nothing more of a
//! server than that its skill files be readable.

use std::sync::OnceLock;

use switchboard_server::skills::{Skill, Skills};

const GREET_PEOPLE: &str = include_str!("../skills/greet-people/SKILL.md");
const GREETING_STYLES: &str = include_str!("../skills/greet-people/references/STYLES.md");
const ARITHMETIC: &str = include_str!("../skills/demo/arithmetic/SKILL.md");
const SUMS: &str = include_str!("../skills/demo/arithmetic/examples/SUMS.md");

/// The skills, built once.
pub(super) fn catalogue() -> &'static Skills {
    static SKILLS: OnceLock<Skills> = OnceLock::new();
    SKILLS.get_or_init(|| {
        let mut skills = Skills::new();
        // The files are ours and tested (see `tests::features`): a failure here is a bug
        // in this crate, never input from outside; the server then serves what was built.
        if let Err(error) = build(&mut skills) {
            super::demo::log(format_args!("the demo skills cannot be served: {error}"));
        }
        skills
    })
}

fn build(skills: &mut Skills) -> Result<(), switchboard_server::Error> {
    let greet =
        Skill::from_skill_md(GREET_PEOPLE)?.with_file("references/STYLES.md", GREETING_STYLES);
    skills.add(greet)?;
    let arithmetic = Skill::from_skill_md(ARITHMETIC)?.with_file("examples/SUMS.md", SUMS);
    skills.add(arithmetic.under("demo"))
}
