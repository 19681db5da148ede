//! Puts the kernel's linker script on the link path (bare-metal builds only).

use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=kernel.ld");
    println!("cargo:rerun-if-changed=build.rs");
    // The user image the kernel embeds (built and named by `cargo xtask`).
    println!("cargo:rerun-if-env-changed=DEMO_USER_ELF");
    if let Some(user) = env::var_os("DEMO_USER_ELF") {
        println!("cargo:rerun-if-changed={}", PathBuf::from(user).display());
    }
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("kernel.ld", out.join("kernel.ld")).expect("copy kernel.ld to OUT_DIR");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tkernel.ld");
    println!("cargo:rustc-link-arg-bins=-Tdefmt.x");
}
