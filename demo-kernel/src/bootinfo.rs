//! Logs what CPU the kernel runs on: MIDR, cache type, TCM status, MMU setup.

use crate::cp15;

/// MIDR of QEMU's `-cpu arm926` (ARM926EJ-S r0p5).
pub const MIDR_ARM926: u32 = 0x4106_9265;

/// The ARM-defined name of a MIDR's implementer/architecture/part, if known.
pub fn cpu_name(midr: u32) -> &'static str {
    match (midr >> 24, midr >> 4 & 0xFFF) {
        (0x41, 0x926) => "ARM926EJ-S",
        (0x41, 0x920) => "ARM920T",
        (0x69, 0xB11) => "StrongARM SA-1110",
        (0x69, 0xA11) => "StrongARM SA-1100",
        (0x69, _) => "Intel XScale/StrongARM",
        _ => "unknown",
    }
}

/// Architecture field of a MIDR (bits \[19:16\]).
fn arch_name(midr: u32) -> &'static str {
    match midr >> 16 & 0xF {
        1 => "ARMv4",
        2 => "ARMv4T",
        3 => "ARMv5",
        4 => "ARMv5T",
        5 => "ARMv5TE",
        6 => "ARMv5TEJ",
        7 => "ARMv6",
        _ => "other",
    }
}

/// One cache's geometry from a cache type register size field.
struct CacheGeometry {
    bytes: u32,
    ways: u32,
    line: u32,
}

fn geometry(field: u32) -> CacheGeometry {
    let m = field >> 2 & 1;
    let size = field >> 6 & 0xF;
    let assoc = field >> 3 & 0x7;
    let len = field & 3;
    let scale = |base: u32| if m == 1 { base + base / 2 } else { base };
    CacheGeometry {
        bytes: scale(512 << size),
        ways: if m == 1 && assoc == 0 {
            0
        } else {
            scale(1 << assoc)
        },
        line: 8 << len,
    }
}

/// Logs the CPU identification, caches, TCMs and MMU registers.
pub fn log() {
    let midr = cp15::midr();
    defmt::info!(
        "CPU: {=str} (MIDR {=u32:#010x}: implementer {=u32:#04x}, variant {=u32}, {=str}, part {=u32:#05x}, revision {=u32})",
        cpu_name(midr),
        midr,
        midr >> 24,
        midr >> 20 & 0xF,
        arch_name(midr),
        midr >> 4 & 0xFFF,
        midr & 0xF
    );
    let ctr = cp15::cache_type();
    if ctr == midr {
        defmt::info!("cache type register not implemented (reads as MIDR)");
    } else {
        let d = geometry(ctr >> 12 & 0xFFF);
        let i = geometry(ctr & 0xFFF);
        defmt::info!(
            "caches (CTR {=u32:#010x}, type {=u32:#x}, {=str}): D {=u32} KiB {=u32}-way {=u32}-byte lines, I {=u32} KiB {=u32}-way {=u32}-byte lines",
            ctr,
            ctr >> 25 & 0xF,
            if ctr >> 24 & 1 == 1 { "separate" } else { "unified" },
            d.bytes / 1024,
            d.ways,
            d.line,
            i.bytes / 1024,
            i.ways,
            i.line
        );
    }
    let tcm = cp15::tcm_status();
    defmt::info!(
        "TCM status {=u32:#010x}: DTCM {=str}, ITCM {=str}",
        tcm,
        if tcm >> 16 & 1 == 1 {
            "present"
        } else {
            "absent"
        },
        if tcm & 1 == 1 { "present" } else { "absent" }
    );
    defmt::info!(
        "MMU: SCTLR {=u32:#010x} TTBR {=u32:#010x} DACR {=u32:#010x} FCSEIDR {=u32:#010x}",
        cp15::sctlr(),
        cp15::ttbr(),
        cp15::dacr(),
        cp15::fcseidr()
    );
}
