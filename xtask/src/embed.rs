//! The embedding example (`examples/embed`), stage `embed` of
//! `cargo xtask test`: a crate outside the workspace (its own `[workspace]`
//! and `Cargo.lock`), built the way a user's crate is, with
//! `--manifest-path`, into `<target>/embed`.
//!
//! The stage checks, in order:
//! 1. that every Rust and TOML snippet of `docs/porting.md` appears
//!    verbatim in the example file it names ([`check_snippets`]), so the
//!    guide shows compiled, tested code and cannot drift from it;
//! 2. clippy (`-D warnings`) of the example and its tests on the host;
//! 3. its host tests (the steps on a recording `MockCp15`);
//! 4. clippy and a build for `armv5te-none-eabi` (`-Zbuild-std=core`), which
//!    compiles the hardware-only module (`HwCp15`).
//!
//! `--locked` throughout: the example's lockfile must not change.
//! Formatting is checked by the `fmt` stage.

use std::path::Path;
use std::process::Command;

use crate::cargo::{self, run_checked, ARMV5TE};
use crate::{repo_root, Error, Result};

/// The example's manifest, from the repository root.
pub const MANIFEST: &str = "examples/embed/Cargo.toml";
/// The porting guide whose snippets come from the example.
pub const PORTING: &str = "docs/porting.md";
/// The directory every snippet's source file must be in.
pub const SNIPPET_ROOT: &str = "examples/embed/";

/// Runs the stage (see the module docs).
pub fn run() -> Result<()> {
    let root = repo_root();
    let doc = read(&root.join(PORTING))?;
    let n = check_snippets(&doc, |p| std::fs::read_to_string(root.join(p)).ok())
        .map_err(|e| Error::Check(format!("{PORTING}: {e}")))?;
    println!("{PORTING}: {n} snippets found verbatim in {SNIPPET_ROOT}");
    let dir = cargo::target_dir()?.join("embed");
    let with_manifest = |mut c: Command| {
        c.args(["--locked", "--manifest-path", MANIFEST, "--target-dir"])
            .arg(&dir);
        c
    };
    let host = |sub: &str| {
        let mut c = cargo::cargo();
        c.arg(sub);
        with_manifest(c)
    };
    run_checked(host("clippy").args(["--all-targets", "--", "-D", "warnings"]))?;
    run_checked(&mut host("test"))?;
    crate::setup::ensure_rust_src()?;
    let arm = |sub: &str| with_manifest(cargo::arm_cargo(sub, ARMV5TE));
    run_checked(arm("clippy").args(["--", "-D", "warnings"]))?;
    run_checked(&mut arm("build"))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        what: format!("reading {}", path.display()),
        source,
    })
}

/// A fenced code block of the guide that quotes a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    /// Line of the opening fence (from 1).
    pub line: usize,
    /// The file it quotes, from the repository root.
    pub source: String,
    /// The quoted lines, each ending in `\n`.
    pub body: String,
}

/// The source marker of a snippet's first line: `// PATH` in Rust, `# PATH`
/// in TOML.
fn marker<'a>(lang: &str, first: &'a str) -> Option<&'a str> {
    let prefix = match lang {
        "rust" => "// ",
        "toml" => "# ",
        _ => return None,
    };
    first.strip_prefix(prefix).map(str::trim)
}

/// The snippets of `doc`: every block fenced with ```` ```rust ```` or
/// ```` ```toml ```` must open with a line naming its source file under
/// [`SNIPPET_ROOT`] (`// examples/embed/src/boot.rs`, `# examples/embed/Cargo.toml`);
/// the lines after it are the quote. Blocks in other languages (shell
/// commands, text) are not checked. Fences must start at the beginning of
/// a line and use backticks, so that no Rust or TOML block escapes the check.
pub fn snippets(doc: &str) -> std::result::Result<Vec<Snippet>, String> {
    let mut out = Vec::new();
    let mut lines = doc.lines().enumerate();
    while let Some((i, l)) = lines.next() {
        let trimmed = l.trim_start();
        if trimmed.starts_with("~~~") || (trimmed.starts_with("```") && trimmed.len() != l.len()) {
            return Err(format!(
                "line {}: fences start at column 1 with backticks",
                i + 1
            ));
        }
        let Some(info) = l.strip_prefix("```") else {
            continue;
        };
        let lang = info.split([',', ' ']).next().unwrap_or("").trim();
        let mut block = Vec::new();
        let mut closed = false;
        for (_, b) in lines.by_ref() {
            if b.starts_with("```") {
                closed = true;
                break;
            }
            block.push(b);
        }
        if !closed {
            return Err(format!("line {}: unterminated code block", i + 1));
        }
        if lang != "rust" && lang != "toml" {
            continue;
        }
        let source = block.first().and_then(|f| marker(lang, f));
        let Some(source) = source.filter(|s| s.starts_with(SNIPPET_ROOT)) else {
            return Err(format!(
                "line {}: a {lang} block must open with its source file under {SNIPPET_ROOT} \
                 (`{} {SNIPPET_ROOT}...`)",
                i + 1,
                if lang == "rust" { "//" } else { "#" }
            ));
        };
        let body: String = block[1..].iter().map(|b| format!("{b}\n")).collect();
        if body.trim().is_empty() {
            return Err(format!("line {}: empty snippet", i + 1));
        }
        out.push(Snippet {
            line: i + 1,
            source: source.to_string(),
            body,
        });
    }
    Ok(out)
}

/// Checks that every snippet of `doc` ([`snippets`]) appears verbatim, as
/// whole lines, in the file it names (`read` gives a file's text from its
/// path, `None` if it does not exist). Returns the number of snippets.
pub fn check_snippets(
    doc: &str,
    read: impl Fn(&str) -> Option<String>,
) -> std::result::Result<usize, String> {
    let all = snippets(doc)?;
    for s in &all {
        let text = read(&s.source)
            .ok_or_else(|| format!("line {}: {} does not exist", s.line, s.source))?;
        if !format!("\n{text}").contains(&format!("\n{}", s.body)) {
            return Err(format!(
                "line {}: the snippet is not in {} as written (update the guide \
                 from the file)",
                s.line, s.source
            ));
        }
    }
    Ok(all.len())
}

/// The `(name, version)` of every crates.io package a `Cargo.lock` pins.
pub fn registry_packages(lock: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for block in lock.split("[[package]]").skip(1) {
        let field = |k: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(k)
                    .and_then(|r| r.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_string())
            })
        };
        if let (Some(name), Some(version), Some(source)) =
            (field("name"), field("version"), field("source"))
        {
            if source.starts_with("registry+") {
                out.push((name, version));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(path: &str) -> Option<String> {
        match path {
            "examples/embed/src/a.rs" => Some("fn a() {\n    one();\n    two();\n}\n".into()),
            "examples/embed/Cargo.toml" => Some("[package]\nname = \"x\"\n".into()),
            _ => None,
        }
    }

    #[test]
    fn snippets_found_verbatim_pass() {
        let doc = "# Guide\n\n```rust\n// examples/embed/src/a.rs\n    one();\n    two();\n```\n\n\
                   ```toml\n# examples/embed/Cargo.toml\nname = \"x\"\n```\n\n```sh\ncargo test\n```\n";
        assert_eq!(check_snippets(doc, files), Ok(2));
        let s = snippets(doc).unwrap();
        assert_eq!(
            (s[0].line, s[0].source.as_str()),
            (3, "examples/embed/src/a.rs")
        );
    }

    #[test]
    fn a_changed_or_partial_line_is_drift() {
        let changed = "```rust\n// examples/embed/src/a.rs\n    one();\n    three();\n```\n";
        assert!(check_snippets(changed, files)
            .unwrap_err()
            .contains("line 1"));
        // Whole lines only: the end of a line is not a snippet.
        let partial = "```rust\n// examples/embed/src/a.rs\none();\n```\n";
        assert!(check_snippets(partial, files).is_err());
    }

    #[test]
    fn every_rust_or_toml_block_names_an_existing_example_file() {
        for doc in [
            "```rust\nfn a() {}\n```\n",
            "```rust\n// crates/fass/src/lib.rs\nfn a() {}\n```\n",
            "```toml\n[package]\n```\n",
            "```rust,ignore\nfn a() {}\n```\n",
            "```rust\n// examples/embed/src/a.rs\n```\n",
        ] {
            assert!(check_snippets(doc, files).is_err(), "{doc}");
        }
        let missing = "```rust\n// examples/embed/src/b.rs\nfn b() {}\n```\n";
        assert!(check_snippets(missing, files)
            .unwrap_err()
            .contains("does not exist"));
    }

    #[test]
    fn fences_that_could_hide_a_block_are_refused() {
        for doc in [
            "- item\n  ```rust\n  fn a() {}\n  ```\n",
            "~~~rust\nfn a() {}\n~~~\n",
            "```rust\n// examples/embed/src/a.rs\n    one();\n",
        ] {
            assert!(snippets(doc).is_err(), "{doc}");
        }
    }

    #[test]
    fn the_porting_guide_quotes_the_example() {
        let root = repo_root();
        let doc = std::fs::read_to_string(root.join(PORTING)).unwrap();
        let n = check_snippets(&doc, |p| std::fs::read_to_string(root.join(p)).ok()).unwrap();
        assert!(n >= 7, "one snippet per step at least, found {n}");
    }

    #[test]
    fn the_example_pins_the_workspace_versions() {
        let root = repo_root();
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        let ws = registry_packages(&read("Cargo.lock"));
        let example = registry_packages(&read("examples/embed/Cargo.lock"));
        assert!(example.iter().any(|(n, _)| n == "heapless"));
        for (name, version) in &example {
            let pinned: Vec<_> = ws.iter().filter(|(n, _)| n == name).collect();
            assert!(
                pinned.is_empty() || pinned.iter().any(|(_, v)| v == version),
                "examples/embed/Cargo.lock pins {name} {version}, the workspace {pinned:?}"
            );
        }
    }

    #[test]
    fn registry_packages_reads_name_version_and_source() {
        let lock = "version = 4\n\n[[package]]\nname = \"a\"\nversion = \"1.0.0\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n\
                    [[package]]\nname = \"local\"\nversion = \"0.1.0\"\n";
        assert_eq!(registry_packages(lock), vec![("a".into(), "1.0.0".into())]);
    }
}
