//! Installs what a fresh machine lacks: the `rust-src` component (for
//! `-Zbuild-std`) and `qemu-system-arm` (from Debian, when running as root).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cargo::run_checked;
use crate::{Error, Result};

/// The QEMU binary.
pub const QEMU: &str = "qemu-system-arm";

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string())
}

/// The sysroot of the `rustc` cargo will use.
fn sysroot() -> Result<PathBuf> {
    let out = Command::new(rustc())
        .args(["--print", "sysroot"])
        .output()
        .map_err(|source| Error::Spawn {
            command: "rustc --print sysroot".into(),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::CommandFailed {
            command: "rustc --print sysroot".into(),
            status: out.status,
        });
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Whether `sysroot` holds the standard library sources `-Zbuild-std` needs.
pub fn has_rust_src(sysroot: &Path) -> bool {
    sysroot
        .join("lib/rustlib/src/rust/library/core/Cargo.toml")
        .is_file()
}

/// Makes sure `rust-src` is installed (`rustup component add rust-src` if not).
pub fn ensure_rust_src() -> Result<()> {
    let root = sysroot()?;
    if has_rust_src(&root) {
        return Ok(());
    }
    eprintln!(
        "xtask: rust-src missing in {}; running `rustup component add rust-src`",
        root.display()
    );
    let mut cmd = Command::new("rustup");
    cmd.args(["component", "add", "rust-src"]);
    run_checked(&mut cmd)?;
    if has_rust_src(&root) {
        Ok(())
    } else {
        Err(Error::Missing(format!(
            "rust-src is still missing under {} after `rustup component add rust-src`",
            root.display()
        )))
    }
}

/// Finds `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Returns the path of `qemu-system-arm`, installing it with apt-get when it
/// is missing and this process runs as root.
pub fn ensure_qemu() -> Result<PathBuf> {
    if let Some(p) = find_on_path(QEMU) {
        return Ok(p);
    }
    let hint =
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y qemu-system-arm";
    if !is_root() || find_on_path("apt-get").is_none() {
        return Err(Error::Missing(format!(
            "{QEMU} not found on PATH; install it, e.g. as root: {hint}"
        )));
    }
    eprintln!("xtask: {QEMU} missing; running `{hint}`");
    run_checked(Command::new("apt-get").arg("update"))?;
    run_checked(
        Command::new("apt-get")
            .args(["install", "-y", "qemu-system-arm"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    find_on_path(QEMU)
        .ok_or_else(|| Error::Missing(format!("{QEMU} still not on PATH after `{hint}`")))
}
