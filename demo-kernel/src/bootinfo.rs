//! Logs what CPU the kernel runs on: MIDR, cache type, TCM status, MMU setup.

use mmu_armv5::regs::{CacheGeometry, Cp15Ext, CpuKind, HwCp15};

/// Size in KiB, ways and line length of an optional cache.
fn geometry(g: Option<CacheGeometry>) -> (u32, u32, u32) {
    g.map_or((0, 0, 0), |g| (g.size() / 1024, g.ways(), g.line()))
}

/// Logs the CPU identification, caches, TCMs and MMU registers, read
/// through `c`.
pub fn log(c: &HwCp15) {
    let midr = c.midr();
    defmt::info!(
        "CPU: {} (MIDR {=u32:#010x}: implementer {=u8:#04x}, variant {=u8}, {}, part {=u16:#05x}, revision {=u8})",
        midr.cpu_kind(),
        midr.bits(),
        midr.implementer(),
        midr.variant(),
        midr.architecture(),
        midr.part_number(),
        midr.revision()
    );
    if midr.cpu_kind() == CpuKind::Arm926ejs {
        defmt::info!("CPU identified as ARM926EJ-S");
    }
    if midr.cpu_kind() == crate::board::CPU_KIND {
        defmt::info!("CPU is the board's: {}", midr.cpu_kind());
    } else {
        defmt::warn!("CPU is not the board's {}", crate::board::CPU_KIND);
    }
    let ctr = c.cache_type();
    if ctr.bits() == midr.bits() || ctr.bits() == 0 {
        defmt::info!(
            "cache type register not implemented (reads {=u32:#010x})",
            ctr.bits()
        );
    } else {
        match ctr.decode() {
            Ok(info) => {
                let (dk, dw, dl) = geometry(info.dcache);
                let (ik, iw, il) = geometry(info.icache);
                defmt::info!(
                    "caches (CTR {=u32:#010x}): {=str}, {}, D {=u32} KiB {=u32}-way {=u32}-byte lines, I {=u32} KiB {=u32}-way {=u32}-byte lines",
                    ctr.bits(),
                    if info.harvard { "separate I/D" } else { "unified" },
                    info.class,
                    dk,
                    dw,
                    dl,
                    ik,
                    iw,
                    il
                );
            }
            Err(e) => defmt::warn!(
                "cache type register {=u32:#010x} does not decode: {}",
                ctr.bits(),
                e
            ),
        }
    }
    let tcm = c.tcm_status();
    defmt::info!(
        "TCM status {=u32:#010x}: DTCM {=str}, ITCM {=str}",
        tcm.bits(),
        if tcm.dtcm_present() {
            "present"
        } else {
            "absent"
        },
        if tcm.itcm_present() {
            "present"
        } else {
            "absent"
        }
    );
    defmt::info!(
        "MMU: SCTLR {=u32:#010x} TTBR {=u32:#010x} DACR {=u32:#010x} FCSEIDR {=u32:#010x}",
        c.sctlr().bits(),
        c.ttbr().bits(),
        c.dacr().bits(),
        c.fcseidr().bits()
    );
}
