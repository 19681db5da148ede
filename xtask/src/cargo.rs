//! Cargo invocations: host checks, ARM builds with `-Zbuild-std=core`, and
//! where the artifacts land (respecting `CARGO_TARGET_DIR` and cargo config).

use std::path::PathBuf;
use std::process::Command;

use crate::board::Board;
use crate::{repo_root, Error, Result};

/// Target of the demo kernel and of the ARMv5TE library builds.
pub const ARMV5TE: &str = "armv5te-none-eabi";
/// Target of the StrongARM (ARMv4, no `BX`) library builds.
pub const ARMV4T: &str = "armv4t-none-eabi";
/// `RUSTFLAGS` of the StrongARM builds.
pub const STRONGARM_RUSTFLAGS: &str = "-C target-cpu=strongarm -C target-feature=-v4t";
/// The `no_std` library crates that must build for ARM.
pub const NO_STD_CRATES: [&str; 3] = ["mmu-armv5", "fass", "spm"];
/// The kernel package (and binary) name.
pub const KERNEL: &str = "demo-kernel";
/// The user program package (and binary) name, built before the kernel.
pub const USER: &str = "demo-user";
/// Environment variable naming the user image for the kernel build.
pub const USER_ELF_ENV: &str = "DEMO_USER_ELF";
/// defmt log level compiled into the kernel.
pub const KERNEL_DEFMT_LOG: &str = "info";

/// The `cargo` that runs us (`CARGO`, set by cargo for `cargo run`/`cargo test`).
pub fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// A `cargo` command in the workspace root.
pub fn cargo() -> Command {
    let mut c = Command::new(cargo_bin());
    c.current_dir(repo_root());
    c
}

/// A `cargo` command for a bare-metal ARM target: `RUSTC_BOOTSTRAP=1`
/// (stable cargo accepts `-Z` flags only with it), `--target`, and
/// `-Zbuild-std=core`. `subcommand` is e.g. `build` or `clippy`.
pub fn arm_cargo(subcommand: &str, target: &str) -> Command {
    let mut c = cargo();
    c.env("RUSTC_BOOTSTRAP", "1")
        .args([subcommand, "--target", target, "-Zbuild-std=core"]);
    c
}

/// Renders a command for messages: `CARGO_VAR=... cargo build ...`.
pub fn display(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            s.push_str(&format!(
                "{}={:?} ",
                k.to_string_lossy(),
                v.to_string_lossy()
            ));
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `cmd` (inheriting stdio) and fails unless it exits successfully.
pub fn run_checked(cmd: &mut Command) -> Result<()> {
    let command = display(cmd);
    let status = cmd.status().map_err(|source| Error::Spawn {
        command: command.clone(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::CommandFailed { command, status })
    }
}

/// The workspace's target directory as cargo sees it (`cargo metadata`), so
/// `CARGO_TARGET_DIR` and `build.target-dir` are honoured.
pub fn target_dir() -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    let command = display(&cmd);
    let out = cmd.output().map_err(|source| Error::Spawn {
        command: command.clone(),
        source,
    })?;
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        return Err(Error::CommandFailed {
            command,
            status: out.status,
        });
    }
    target_dir_from_metadata(&out.stdout)
}

/// Extracts `target_directory` from `cargo metadata` JSON.
pub fn target_dir_from_metadata(json: &[u8]) -> Result<PathBuf> {
    let v: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| Error::Check(format!("cargo metadata output is not JSON: {e}")))?;
    v.get("target_directory")
        .and_then(|t| t.as_str())
        .map(PathBuf::from)
        .ok_or_else(|| Error::Check("cargo metadata output has no target_directory".into()))
}

/// An [`arm_cargo`] command for `board`'s CPU: its target, and its
/// `RUSTFLAGS` when it needs some (StrongARM).
pub fn board_cargo(subcommand: &str, board: Board) -> Command {
    let mut c = arm_cargo(subcommand, board.target());
    if let Some(flags) = board.rustflags() {
        c.env("RUSTFLAGS", flags);
    }
    c
}

/// Builds the user program (release, for versatilepb's ARMv5TE) and returns its ELF path.
pub fn build_user() -> Result<PathBuf> {
    build_user_for(Board::default())
}

/// Builds the user program (release) for `board`'s CPU and returns its ELF path.
pub fn build_user_for(board: Board) -> Result<PathBuf> {
    crate::setup::ensure_rust_src()?;
    let mut cmd = board_cargo("build", board);
    cmd.args(["--release", "-p", USER]);
    run_checked(&mut cmd)?;
    let elf = target_dir()?
        .join(board.target())
        .join("release")
        .join(USER);
    if elf.is_file() {
        Ok(elf)
    } else {
        Err(Error::Missing(format!(
            "user program build succeeded but {} does not exist",
            elf.display()
        )))
    }
}

/// A cargo command for the kernel (`build` or `clippy`): builds the user
/// program first and names its ELF in [`USER_ELF_ENV`] (the kernel embeds it).
pub fn kernel_cargo(subcommand: &str) -> Result<Command> {
    kernel_cargo_for(subcommand, Board::default())
}

/// [`kernel_cargo`] for `board`: its target and flags, the user program
/// built for the same CPU, `--no-default-features --features board-NAME`.
pub fn kernel_cargo_for(subcommand: &str, board: Board) -> Result<Command> {
    kernel_cargo_with(subcommand, board, &[])
}

/// [`kernel_cargo_for`] with the kernel's extra cargo `features` (e.g.
/// `cache-check`) besides the board's.
pub fn kernel_cargo_with(subcommand: &str, board: Board, features: &[&str]) -> Result<Command> {
    let user = build_user_for(board)?;
    let mut cmd = board_cargo(subcommand, board);
    cmd.args(["--release", "-p", KERNEL])
        .args([
            "--no-default-features",
            "--features",
            &feature_list(board, features),
        ])
        .env("DEFMT_LOG", KERNEL_DEFMT_LOG)
        .env(USER_ELF_ENV, user);
    Ok(cmd)
}

/// The `--features` value: the board's feature, then `extra`.
fn feature_list(board: Board, extra: &[&str]) -> String {
    let mut list = board.feature();
    for f in extra {
        list.push(',');
        list.push_str(f);
    }
    list
}

/// Builds the demo kernel for versatilepb and returns its ELF path.
pub fn build_kernel() -> Result<PathBuf> {
    build_kernel_for(Board::default())
}

/// Builds the demo kernel (release, with the user program embedded) for
/// `board` and returns the path of a copy of its ELF under
/// `<target>/release/boards/<board>/` (versatilepb and connex share a
/// target, so cargo's own output path holds whichever was built last).
/// This is the kernel a user builds: no measurement bookkeeping on its
/// paths, no `BENCH` lines ([`build_measuring_kernel_for`] has them).
pub fn build_kernel_for(board: Board) -> Result<PathBuf> {
    build_kernel_features(board, &[])
}

/// The feature of the demo kernel's measuring build (transit stamps and
/// their accounting on the trap and switch paths, the scenarios' `BENCH`,
/// `TRANSITS` and `SWITCHPATH` lines).
pub const MEASURE_FEATURE: &str = "measure";

/// The measuring build of the demo kernel for `board` (the
/// [`MEASURE_FEATURE`] feature), built in its own target directory
/// `<target>/measure/` so that it never replaces the shipped build's
/// output (nor the other way round); the path of a copy of its ELF under
/// `<target>/measure/<triple>/release/boards/<board>+measure/`.
pub fn build_measuring_kernel_for(board: Board) -> Result<PathBuf> {
    build_kernel_in(board, &[MEASURE_FEATURE], Some("measure"))
}

/// [`build_kernel_for`] with the kernel's extra cargo `features`, e.g.
/// `&["cache-check"]` (the marker accesses of the cache-check plugin, and
/// the `omit=` command-line option). The copy of the ELF goes to
/// `<target>/release/boards/<board>[+feature...]/`, so kernels built with
/// different features do not overwrite each other.
pub fn build_kernel_features(board: Board, features: &[&str]) -> Result<PathBuf> {
    build_kernel_in(board, features, None)
}

/// Builds with `features`, in `<target>/<subdir>` if given (its own
/// cargo target directory), and copies the ELF as [`build_kernel_features`]
/// says.
fn build_kernel_in(board: Board, features: &[&str], subdir: Option<&str>) -> Result<PathBuf> {
    let mut cmd = kernel_cargo_with("build", board, features)?;
    let mut target = target_dir()?;
    if let Some(d) = subdir {
        target = target.join(d);
        cmd.arg("--target-dir").arg(&target);
    }
    run_checked(&mut cmd)?;
    let release = target.join(board.target()).join("release");
    let built = release.join(KERNEL);
    if !built.is_file() {
        return Err(Error::Missing(format!(
            "kernel build succeeded but {} does not exist",
            built.display()
        )));
    }
    let dir = release.join("boards").join(board_dir(board, features));
    let elf = dir.join(KERNEL);
    let io = |source| Error::Io {
        what: format!("copying {} to {}", built.display(), elf.display()),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    // Copied through a temporary name and renamed, so a concurrent reader
    // never sees half a file.
    let tmp = dir.join(format!("{KERNEL}.{}.tmp", std::process::id()));
    std::fs::copy(&built, &tmp).map_err(io)?;
    std::fs::rename(&tmp, &elf).map_err(io)?;
    Ok(elf)
}

/// The directory name of a kernel built for `board` with `features`:
/// `versatilepb`, `collie+cache-check`.
fn board_dir(board: Board, features: &[&str]) -> String {
    let mut name = board.name().to_string();
    for f in features {
        name.push('+');
        name.push_str(f);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_is_read_from_metadata() {
        let json = br#"{"packages":[],"target_directory":"/x/target","version":1}"#;
        assert_eq!(
            target_dir_from_metadata(json).unwrap(),
            PathBuf::from("/x/target")
        );
        assert!(target_dir_from_metadata(b"{}").is_err());
        assert!(target_dir_from_metadata(b"not json").is_err());
    }

    #[test]
    fn extra_features_follow_the_board_and_name_the_copy() {
        let b = Board::default();
        assert_eq!(feature_list(b, &[]), b.feature());
        assert_eq!(
            feature_list(b, &["cache-check"]),
            format!("{},cache-check", b.feature())
        );
        assert_eq!(board_dir(b, &[]), b.name());
        assert_eq!(
            board_dir(b, &["cache-check"]),
            format!("{}+cache-check", b.name())
        );
    }

    #[test]
    fn arm_commands_carry_bootstrap_and_build_std() {
        let c = arm_cargo("build", ARMV4T);
        let shown = display(&c);
        assert!(shown.starts_with("RUSTC_BOOTSTRAP=\"1\" "), "{shown}");
        assert!(
            shown.ends_with(" build --target armv4t-none-eabi -Zbuild-std=core"),
            "{shown}"
        );
    }
}
