//! The kernel's side of the cache check (feature `cache-check`): the
//! assembly macros of the marker accesses (`asm/marker.s`, the protocol of
//! `mmu_armv5::marker`), which every `global_asm!` file that issues a CP15
//! operation after the MMU is on puts in front of its text
//! ([`asm_with_markers!`]), and the pseudo events the Rust side reports.
//!
//! Without the feature the macros are defined empty, so not one
//! instruction of the kernel differs, and [`event`] is empty.

/// `concat!` of the marker macros, the assembly file `$file` (a path
/// relative to the crate's root, `src/asm/...`) and the `.purgem`s that end the macros'
/// scope (each `global_asm!` block may land in the same assembler input as
/// another).
#[cfg(feature = "cache-check")]
macro_rules! asm_with_markers {
    ($file:literal) => {
        concat!(
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/asm/marker.s")),
            "\n",
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $file)),
            "\n.purgem MARKER_WINDOW\n.purgem MARK_EVENT\n.purgem MARK_MRC\n.purgem MARK_MCR\n.purgem MARK_KEY\n"
        )
    };
}

/// Without the feature: the same macros, empty.
#[cfg(not(feature = "cache-check"))]
macro_rules! asm_with_markers {
    ($file:literal) => {
        concat!(
            ".macro MARK_KEY t, v, key\n.endm\n",
            ".macro MARK_MCR t, v, crn, crm, opc2\n.endm\n",
            ".macro MARK_MRC t, v, crn, crm, opc2\n.endm\n",
            ".macro MARK_EVENT t, v, event\n.endm\n",
            ".macro MARKER_WINDOW l1\n.endm\n",
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $file)),
            "\n.purgem MARKER_WINDOW\n.purgem MARK_EVENT\n.purgem MARK_MRC\n.purgem MARK_MCR\n.purgem MARK_KEY\n"
        )
    };
}

pub(crate) use asm_with_markers;

use mmu_armv5::marker::Event;

/// Reports `event` with `value` to the cache-check observer (nothing
/// without the feature `cache-check`).
#[inline(always)]
pub fn event(event: Event, value: u32) {
    // SAFETY: a stand-in used only for its marker loads, which touch no
    // CP15 state (the marker window is mapped by the boot and kernel
    // tables whenever the MMU is on, which it is in all Rust code).
    let cp15 = unsafe { mmu_armv5::regs::HwCp15::new() };
    cp15.marker(event, value);
}

/// What the observer must know at boot, right after the MMU is on (the
/// first Rust code): the registers the boot code set up (SCTLR, TTBR,
/// DACR, FCSEIDR, each read with its `MRC` marker) and every virtual range
/// the kernel maps uncached or that is not behind the caches, in every
/// address space: the device MiBs; on a board with TCM the physical window
/// (all RAM, uncached, `spm`'s copies), the kernel's TCM views and the
/// processes' TCM resource pages (kernel-only, uncached).
///
/// Not declared (the protocol names virtual ranges valid in every address
/// space, and these are neither): a process's own TCM pages at the
/// address it chose (`TCM_CREATE`), and the uncached sections in-kernel
/// tests map for themselves. An observer must treat the board's TCM banks
/// (physical, after the user frames) as not cached.
#[cfg(feature = "cache-check")]
pub fn boot_report(cp15: &mmu_armv5::regs::HwCp15) {
    use mmu_armv5::regs::{Cp15, Cp15Reg};
    for reg in [
        Cp15Reg::Sctlr,
        Cp15Reg::Ttbr,
        Cp15Reg::Dacr,
        Cp15Reg::Fcseidr,
    ] {
        let _ = cp15.read(reg);
    }
    let uncached = |start: u32, len: u32| {
        cp15.marker(Event::UncachedBegin, start);
        cp15.marker(Event::UncachedEnd, start.wrapping_add(len));
    };
    let board = crate::board::LAYOUT;
    uncached(crate::mmu::DEVICE_VIRT, (board.device_count as u32) << 20);
    if crate::board::HAS_TCM {
        use crate::proc::tcm::{KTCM_VA, MAX_BANK_SIZE, PHYS_WINDOW, RES_SLOTS, USER_RES_VA};
        uncached(PHYS_WINDOW, board.ram_mib << 20);
        // Read-only and read/write views, two bank slots each.
        uncached(KTCM_VA, 4 * MAX_BANK_SIZE);
        uncached(USER_RES_VA, (RES_SLOTS as u32) * 4096);
    }
}
