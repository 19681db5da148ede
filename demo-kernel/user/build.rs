//! Puts the user program's linker script on the link path (bare-metal builds only).

use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=user.ld");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(no_thumb)");
    // A CPU without Thumb (StrongARM: `-C target-feature=-v4t`) cannot
    // assemble the hostile scenario's Thumb attack.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.split('\x1f').any(|f| f.contains("-v4t")) {
        println!("cargo:rustc-cfg=no_thumb");
    }
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy("user.ld", out.join("user.ld")).expect("copy user.ld to OUT_DIR");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tuser.ld");
}
