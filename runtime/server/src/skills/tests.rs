use super::*;

fn refunds() -> Skill {
    Skill::from_skill_md(
        "---\nname: refunds\ndescription: Process refunds\nlicense: MIT\n---\nBody\n",
    )
    .unwrap()
    .under("acme/billing")
    .with_file("references/POLICY.md", "30 days\n")
    .with_file("logo.bin", vec![0xff, 0x00])
}

#[test]
fn an_entry_is_the_front_matter_and_every_file_with_its_digest() {
    let mut skills = Skills::new();
    skills.add(refunds()).unwrap();
    let entry = skills.get("skill://acme/billing/refunds/SKILL.md").unwrap();
    assert_eq!(
        entry["frontmatter"],
        json!({"name": "refunds", "description": "Process refunds", "license": "MIT"})
    );
    let files: Vec<&str> = entry["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "skill://acme/billing/refunds/SKILL.md",
            "skill://acme/billing/refunds/logo.bin",
            "skill://acme/billing/refunds/references/POLICY.md",
        ]
    );
    let policy = &entry["resources"][2];
    assert_eq!(policy["size"], 8);
    // printf '30 days\n' | sha256sum
    assert_eq!(
        policy["digest"],
        "sha256:afc85fe257903b22a88c10cd9cf2eb0ef8b671b6da96f3410eb7c7f4a271e167"
    );
    assert_eq!(
        skills
            .read("skill://acme/billing/refunds/logo.bin")
            .unwrap()["contents"][0]["blob"],
        "/wA="
    );
    assert_eq!(
        skills
            .read("skill://acme/billing/refunds/references/POLICY.md")
            .unwrap()["contents"][0]["text"],
        "30 days\n"
    );
    assert!(skills
        .read("skill://acme/billing/refunds/nope.md")
        .is_none());
}

#[test]
fn directories_list_their_direct_children() {
    let mut skills = Skills::new();
    skills.add(refunds()).unwrap();
    skills
        .add(
            Skill::new("chargebacks", "Disputes", "Body")
                .unwrap()
                .under("acme/billing"),
        )
        .unwrap();
    let names = |uri: &str| -> Vec<(String, String)> {
        skills
            .read_directory(uri)
            .unwrap_or_default()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["mimeType"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let dir = |n: &str| (n.to_owned(), DIRECTORY_MIME_TYPE.to_owned());
    assert_eq!(
        names("skill://acme/billing"),
        [dir("chargebacks"), dir("refunds")]
    );
    assert_eq!(names("skill://acme"), [dir("billing")]);
    assert_eq!(
        names("skill://acme/billing/refunds"),
        [
            ("SKILL.md".to_owned(), "text/markdown".to_owned()),
            ("logo.bin".to_owned(), "application/octet-stream".to_owned()),
            dir("references"),
        ]
    );
    assert!(skills
        .read_directory("skill://acme/billing/refunds/SKILL.md")
        .is_none());
    assert!(skills.read_directory("skill://nowhere").is_none());
}

#[test]
fn what_cannot_be_served_is_refused_naming_the_skill() {
    let mut skills = Skills::new();
    skills.add(refunds()).unwrap();
    let again = skills.add(refunds()).unwrap_err().to_string();
    assert!(
        again.contains("skill://acme/billing/refunds/SKILL.md") && again.contains("another skill"),
        "{again}"
    );
    for bad in ["../x", "/x", "a//b", "a/./b", "a b"] {
        let error = skills
            .add(Skill::new("x", "d", "").unwrap().with_file(bad, "x"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("not a file path inside the skill"),
            "{bad}: {error}"
        );
    }
    let error = Skill::new("Bad_Name", "d", "").unwrap_err().to_string();
    assert!(error.contains("not in a skill name"), "{error}");
    let error = Skill::from_skill_md("no front matter")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("SKILL.md") && error.contains("`---`"),
        "{error}"
    );
    let big = Skill::new("big", "d", "")
        .unwrap()
        .with_file("a.bin", vec![0; MAX_BYTES as usize]);
    let error = skills.add(big).unwrap_err().to_string();
    assert!(error.contains("16777216"), "{error}");
}

#[test]
fn a_skill_written_from_its_parts_reads_back_its_strings() {
    let description = "Fields: a: b # not a comment, \"quoted\", é, tab\there\nsecond line";
    let skill = Skill::new("parts", description, "# Parts\n").unwrap();
    let mut skills = Skills::new();
    skills.add(skill).unwrap();
    let entry = skills.get("skill://parts/SKILL.md").unwrap();
    assert_eq!(
        entry["frontmatter"],
        json!({"name": "parts", "description": description})
    );
    let read = skills.read("skill://parts/SKILL.md").unwrap();
    let text = read["contents"][0]["text"].as_str().unwrap();
    assert!(text.ends_with("---\n# Parts\n"), "{text}");
    assert!(Skill::new("parts", " ", "").is_err(), "a blank description");
    assert!(
        Skill::new("parts", "x".repeat(1025), "").is_err(),
        "a long description"
    );
    let error =
        Skill::from_skill_md("---\nname: m\ndescription: d\nmetadata:\n  tools: [a, b]\n---\n")
            .unwrap_err()
            .to_string();
    assert!(error.contains("`tools` is not one"), "{error}");
}
