//! The files of skills: a folder walked into a skill, the checks on their paths and front
//! matter, and what each file is (its MIME type, its digest).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::Error;

/// Why the front matter's other fields are not as the Agent Skills format has them, if they
/// are not: a description of at most 1024 characters, `metadata` a map of strings (hosts and
/// other SDKs skip a skill whose metadata is anything else).
pub(super) fn fields_problem(front_matter: &Map<String, Value>) -> Option<String> {
    let description = front_matter.get("description").and_then(Value::as_str)?;
    let count = description.chars().count();
    if count > 1024 {
        return Some(format!(
            "a description has at most 1024 characters, this one {count}"
        ));
    }
    match front_matter.get("metadata") {
        None => None,
        Some(Value::Object(metadata)) => metadata
            .iter()
            .find(|(_, value)| !value.is_string())
            .map(|(key, _)| format!("`metadata` maps names to strings, and `{key}` is not one")),
        Some(_) => Some("`metadata` is not a map of names to strings".to_owned()),
    }
}

/// Every regular file below `dir` (its path relative to the walk's root, and its bytes),
/// skipping hidden entries and symbolic links.
pub(super) fn walk(
    dir: &Path,
    relative: &str,
    files: &mut Vec<(String, Vec<u8>)>,
) -> Result<(), Error> {
    let unreadable = |path: &Path, e: std::io::Error| Error::Definition {
        kind: "skill",
        name: path.display().to_string(),
        reason: format!("it cannot be read: {e}"),
    };
    let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| unreadable(dir, e))?
        .map(|entry| {
            let entry = entry.map_err(|e| unreadable(dir, e))?;
            Ok((
                entry.file_name().to_string_lossy().into_owned(),
                entry.path(),
            ))
        })
        .collect::<Result<_, Error>>()?;
    entries.sort();
    for (name, path) in entries {
        if name.starts_with('.') {
            continue;
        }
        let child = match relative {
            "" => name,
            relative => format!("{relative}/{name}"),
        };
        let kind = std::fs::symlink_metadata(&path).map_err(|e| unreadable(&path, e))?;
        if kind.is_dir() {
            walk(&path, &child, files)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
            files.push((child, bytes));
        }
    }
    Ok(())
}

/// Whether `c` may stand in a URI path segment as it is (RFC 3986 unreserved, sub-delims,
/// `:` and `@`).
pub(super) fn uri_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c)
}

/// Why `path` is not a file path inside a skill, if it is not.
pub(super) fn relative_path_problem(path: &str) -> Option<String> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path
            .split('/')
            .any(|segment| matches!(segment, "" | "." | "..") || !segment.chars().all(uri_char));
    bad.then(|| {
        format!("`{path}` is not a file path inside the skill (`/`-separated URI path segments, no `.` or `..`)")
    })
}

/// The MIME type of a file by its extension; an unknown one is `text/plain` when the bytes
/// are UTF-8, else `application/octet-stream`.
pub(super) fn mime_type(path: &str, bytes: &[u8]) -> &'static str {
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("rs") => "text/x-rust",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("xml") => "application/xml",
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

/// `sha256:` and the lowercase hex SHA-256 of `bytes`.
pub(super) fn sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    format!("sha256:{}", hex::encode(digest.as_ref()))
}
