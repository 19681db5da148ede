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

/// The toolchain the Miri and fuzz stages run on (Miri and cargo-fuzz's
/// sanitizer builds need nightly).
pub const NIGHTLY: &str = "nightly";
/// The oldest Rust the library crates declare (`rust-version`) and are checked with.
pub const MSRV: &str = "1.87";

/// Whether rustup knows `toolchain` with every one of `components`.
fn has_toolchain(toolchain: &str, components: &[&str]) -> bool {
    let Ok(out) = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain", toolchain])
        .output()
    else {
        return false;
    };
    if !out.status.success() {
        return false;
    }
    let installed = String::from_utf8_lossy(&out.stdout);
    components.iter().all(|c| {
        installed
            .lines()
            .any(|l| l == *c || l.starts_with(&format!("{c}-")))
    })
}

/// Makes sure rustup has `toolchain` (minimal profile) with `components`,
/// installing what is missing.
pub fn ensure_toolchain(toolchain: &str, components: &[&str]) -> Result<()> {
    if has_toolchain(toolchain, components) {
        return Ok(());
    }
    eprintln!("xtask: installing Rust {toolchain} with {components:?} (rustup)");
    let mut cmd = Command::new("rustup");
    cmd.args(["toolchain", "install", toolchain, "--profile", "minimal"]);
    for c in components {
        cmd.args(["--component", c]);
    }
    run_checked(&mut cmd)?;
    if has_toolchain(toolchain, components) {
        Ok(())
    } else {
        Err(Error::Missing(format!(
            "rustup installed {toolchain} but not all of {components:?}"
        )))
    }
}

/// A `cargo` of `toolchain` (through rustup), in the workspace root.
pub fn toolchain_cargo(toolchain: &str) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", toolchain, "cargo"])
        .current_dir(crate::repo_root())
        // The proxies must not pick the outer cargo's toolchain.
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    c
}

/// Makes sure the cargo subcommand binary `bin` (e.g. `cargo-fuzz`) is on
/// `PATH` or in cargo's bin directory, installing `krate` with
/// `cargo install` (`--locked`) when it is missing. Returns its path.
pub fn ensure_cargo_tool(bin: &str, krate: &str) -> Result<PathBuf> {
    let in_cargo_home = || {
        std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .map(|h| h.join("bin").join(bin))
            .filter(|p| p.is_file())
    };
    if let Some(p) = find_on_path(bin).or_else(in_cargo_home) {
        return Ok(p);
    }
    eprintln!("xtask: {bin} missing; running `cargo install {krate} --locked`");
    let mut cmd = Command::new(crate::cargo::cargo_bin());
    cmd.args(["install", krate, "--locked"]);
    run_checked(&mut cmd)?;
    find_on_path(bin)
        .or_else(in_cargo_home)
        .ok_or_else(|| Error::Missing(format!("{bin} not found after `cargo install {krate}`")))
}
