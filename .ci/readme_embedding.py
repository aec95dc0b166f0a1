"""Writes a crate of its own from the README's "Embedding" section: its Cargo.toml from the
section's [dependencies] block (the checkout's path put in for the path the README shows)
and src/main.rs from the section's first Rust example. Used by .ci/run.

usage: readme_embedding.py README RUNTIME_DIR OUT_DIR
"""
import re
import sys
from pathlib import Path

readme, runtime, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
text = Path(readme).read_text()
section = text.split("\n## Embedding\n", 1)[1].split("\n## ", 1)[0]
toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
rust = re.search(r"```rust[^\n]*\n(.*?)```", section, re.S).group(1)
shown = 'switchboard-mcp = { path = "switchboard/runtime" }'
if shown not in toml:
    sys.exit(f"the README's dependency line is not {shown!r}: update .ci/readme_embedding.py")
toml = toml.replace(shown, f'switchboard-mcp = {{ path = "{runtime}" }}')
# Lines a doc test hides (`# …`) are part of the program.
rust = "\n".join(line[2:] if line.startswith("# ") else line for line in rust.splitlines())
(out / "src").mkdir(parents=True, exist_ok=True)
(out / "Cargo.toml").write_text(
    '[package]\nname = "embeds-switchboard"\nversion = "0.0.0"\nedition = "2021"\n'
    'publish = false\n\n' + toml + "\n[workspace]\n"
)
(out / "src" / "main.rs").write_text(rust + "\n")
print(f"wrote {out}/Cargo.toml and src/main.rs ({len(rust.splitlines())} lines)")
