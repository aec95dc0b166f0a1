//! The README shows the embedder's example exactly as `examples/hello.rs` has it (which
//! `cargo test` builds), so the code a reader copies compiles.

#[test]
fn the_readme_shows_the_example_as_it_is() {
    let readme = include_str!("../../../../README.md");
    let example = include_str!("../../examples/hello.rs");
    assert!(
        readme.contains(example.trim_end()),
        "README.md's \"Serving MCP\" example differs from runtime/server/examples/hello.rs"
    );
}
