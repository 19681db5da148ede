//! The hardware edge stays in `mmu-armv5`: a check of the demo kernel's
//! Rust sources.
//!
//! The kernel reaches CP15 only through `mmu_armv5` (its `HwCp15`, the
//! maintenance wrappers, `Cp15Ext`): no string literal in a Rust file
//! under `demo-kernel/src` may hold a coprocessor register transfer
//! (`MCR`, `MRC`, `MCRR`, `MRRC`, their `2` forms, with or without a
//! condition). Every `asm!` template is such a literal, and so is a piece
//! of one built with `concat!` elsewhere, so literals are checked wherever
//! they are; comments are not. The kernel's assembly files
//! (`demo-kernel/src/asm/*.s`: boot, vectors, traps) are not Rust and are
//! not checked.
//!
//! The check is a unit test of this module (run by `cargo test`, the host
//! tests stage of `cargo xtask test`).

use std::path::{Path, PathBuf};

/// A coprocessor instruction found in a Rust string literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based) where the literal starts.
    pub line: usize,
    /// The mnemonic as written.
    pub mnemonic: String,
}

/// Whether `word` is an ARM coprocessor register transfer mnemonic:
/// `MCR`, `MRC`, `MCRR`, `MRRC`, optionally with `2` or a condition code,
/// in any case.
pub fn is_cp_transfer(word: &str) -> bool {
    const CONDITIONS: [&str; 16] = [
        "eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt",
        "le",
    ];
    let w = word.to_ascii_lowercase();
    ["mcrr", "mrrc", "mcr", "mrc"].iter().any(|base| {
        w.strip_prefix(base).is_some_and(|rest| {
            rest.is_empty() || rest == "2" || rest == "al" || CONDITIONS.contains(&rest)
        })
    })
}

/// The string literals of Rust source `src` (comments skipped), each with
/// the line it starts on. Handles escapes, raw strings (`r"…"`, `r#"…"#`),
/// byte strings, character literals and lifetimes; enough for this check,
/// not a full lexer.
pub fn string_literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let newlines = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count();
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (start, mut depth) = (i, 0usize);
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                line += newlines(&b[start..i.min(b.len())]);
            }
            b'r' if raw_start(b, i).is_some() => {
                let (open, hashes) = raw_start(b, i).unwrap_or((i, 0));
                let body = open + 1;
                let mut close = vec![b'"'];
                close.extend(std::iter::repeat_n(b'#', hashes));
                let end = find(b, body, &close).unwrap_or(b.len());
                out.push((line, String::from_utf8_lossy(&b[body..end]).into_owned()));
                line += newlines(&b[i..end]);
                i = (end + close.len()).min(b.len());
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(b.len());
                out.push((line, String::from_utf8_lossy(&b[start..end]).into_owned()));
                line += newlines(&b[i..end]);
                i = end + 1;
            }
            b'\'' => {
                // A character literal (`'x'`, `'\n'`, `'"'`) or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    let mut j = i + 3;
                    while j < b.len() && b[j] != b'\'' {
                        j += 1;
                    }
                    i = j + 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                // Skip the identifier, so `for"` or `br"` prefixes are not
                // mistaken and `r` inside a word starts no raw string.
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &b[start..i];
                if (word == b"b" || word == b"c") && b.get(i) == Some(&b'"') {
                    // b"…", c"…": the quote is handled next round.
                } else if (word == b"br" || word == b"cr") && raw_start(b, i - 1).is_some() {
                    i -= 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// If a raw string starts at `i` (`r"` or `r#…#"`), the index of its
/// opening quote and the number of `#`.
fn raw_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if b.get(i) != Some(&b'r') || (i > 0 && is_ident(b[i - 1]) && !matches!(b[i - 1], b'b' | b'c'))
    {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((j, j - i - 1))
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The coprocessor transfers in the string literals of `src`.
pub fn cp_transfers_in_literals(file: &Path, src: &str) -> Vec<Finding> {
    let mut v = Vec::new();
    for (line, lit) in string_literals(src) {
        // Words are identifiers: `MARK_MCR` (an assembler macro's name) is
        // one word, not the mnemonic `MCR`.
        for word in lit.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if is_cp_transfer(word) {
                v.push(Finding {
                    file: file.to_path_buf(),
                    line,
                    mnemonic: word.to_string(),
                });
            }
        }
    }
    v
}

/// Every coprocessor transfer in a string literal of a Rust file under
/// `dir` (recursively).
///
/// # Errors
/// A directory or file that cannot be read.
pub fn check_dir(dir: &Path) -> std::io::Result<Vec<Finding>> {
    let mut found = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if e.file_type()?.is_dir() {
            found.extend(check_dir(&p)?);
        } else if p.extension().is_some_and(|x| x == "rs") {
            found.extend(cp_transfers_in_literals(&p, &std::fs::read_to_string(&p)?));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(src: &str) -> Vec<(usize, String)> {
        cp_transfers_in_literals(Path::new("x.rs"), src)
            .into_iter()
            .map(|f| (f.line, f.mnemonic))
            .collect()
    }

    #[test]
    fn identifiers_holding_a_mnemonic_are_not_transfers() {
        assert!(found("const S: &str = \".macro MARK_MCR t\\n.endm\";").is_empty());
        assert_eq!(
            found("const S: &str = \"MARK_MCR r0; mcr p15, 0, r0, c3, c0, 0\";"),
            vec![(1, "mcr".to_string())]
        );
    }

    /// The check itself: the demo kernel's Rust code has no `MCR`/`MRC`
    /// of its own (issue 13: the hardware edge lives in `mmu-armv5`).
    #[test]
    fn the_demo_kernel_leaves_coprocessor_access_to_mmu_armv5() {
        let dir = crate::repo_root().join("demo-kernel").join("src");
        let found = check_dir(&dir).unwrap();
        assert!(
            found.is_empty(),
            "CP15 access by hand in the demo kernel (use mmu_armv5: HwCp15, \
             Cp15Ext, the maintenance wrappers, irq): {found:#?}"
        );
        // And the check looks at the kernel's files at all.
        assert!(dir.join("proc").join("tcm").join("mod.rs").is_file());
    }

    #[test]
    fn asm_templates_and_their_pieces_are_found() {
        let src = r##"
fn f() {
    unsafe { core::arch::asm!("mcr p15, 0, {p}, c7, c10, 1", p = in(reg) 0) };
}
macro_rules! lines {
    (1, $op:literal) => { concat!("MCR p15, 0, {a}, ", $op, "\n") };
}
const A: &str = r#"mrceq p15, 0, r0, c1, c0, 0"#;
const B: &[u8] = b"mcrr2 p15";
const C: &str = "nothing here: mcrypt, mrcat, smc";
"##;
        assert_eq!(
            found(src),
            [
                (3, "mcr".into()),
                (6, "MCR".into()),
                (8, "mrceq".into()),
                (9, "mcrr2".into())
            ]
        );
    }

    #[test]
    fn comments_characters_and_lifetimes_are_not_literals() {
        let src = r#"
// mcr p15, 0, r0, c7, c10, 4 in a comment
/// `MRC p15, 0, APSR_nzcv, c7, c14, 3` in a doc comment
/* a block /* nested mcr */ still a comment: mrc */
fn g<'a>(x: &'a str) -> char { let _q = '"'; let _e = '\''; 'm' }
const S: &str = "ok";
fn h() -> &'static str { "mrc p15" }
"#;
        assert_eq!(found(src), [(7, "mrc".into())]);
        let lits: Vec<String> = string_literals(src).into_iter().map(|(_, s)| s).collect();
        assert_eq!(lits, ["ok", "mrc p15"]);
    }

    #[test]
    fn only_transfer_mnemonics_match() {
        for w in [
            "mcr", "MRC", "mcr2", "mrc2", "mcrr", "mrrc", "mcrne", "MRCEQ", "mcral",
        ] {
            assert!(is_cp_transfer(w), "{w}");
        }
        for w in ["mcrypt", "mrs", "msr", "cdp", "ldc", "mcrx", "mr", "c7"] {
            assert!(!is_cp_transfer(w), "{w}");
        }
    }

    #[test]
    fn multi_line_literals_keep_the_line_count() {
        let src = "const A: &str = \"one\ntwo\";\nconst B: &str = r\"x\ny\";\n\"mcr\"\n";
        assert_eq!(found(src), [(5, "mcr".into())]);
    }
}
