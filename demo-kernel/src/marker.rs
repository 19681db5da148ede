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

/// A maintenance operation a cache-check build can leave out on purpose
/// (`omit=NAME` on the command line), so the check's own tests see it
/// report the violation that follows. The value is the code
/// [`Event::Omit`] carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug, defmt::Format)]
#[repr(u32)]
pub enum Omit {
    /// Nothing left out.
    None = 0,
    /// `naive-clean`: the D-cache clean and invalidate of the naive lean
    /// switch (`fast_flush_caches`).
    NaiveClean = 1,
    /// `tlb-unmap`: the TLB invalidations of the `UNMAP` system call's
    /// unmap.
    TlbUnmap = 2,
    /// `frame-clean`: the D-cache clean of a new frame's kernel alias, after
    /// zeroing it and (an image page) after filling it.
    FrameClean = 3,
    /// `icache-load`: the I-cache invalidation after loading code.
    IcacheLoad = 4,
    /// `recycle-clean`: the D-cache clean of FASS's first flush for a
    /// recycled dirty domain.
    RecycleClean = 5,
}

impl Omit {
    /// Every omission, [`Omit::None`] first.
    pub const ALL: [Omit; 6] = [
        Omit::None,
        Omit::NaiveClean,
        Omit::TlbUnmap,
        Omit::FrameClean,
        Omit::IcacheLoad,
        Omit::RecycleClean,
    ];

    /// The command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Omit::None => "none",
            Omit::NaiveClean => "naive-clean",
            Omit::TlbUnmap => "tlb-unmap",
            Omit::FrameClean => "frame-clean",
            Omit::IcacheLoad => "icache-load",
            Omit::RecycleClean => "recycle-clean",
        }
    }

    /// The omission named `name`.
    pub fn parse(name: &str) -> Option<Omit> {
        Omit::ALL.into_iter().find(|o| o.name() == name)
    }
}

#[cfg(feature = "cache-check")]
static OMIT: crate::global::Global<Omit> = crate::global::Global::new(Omit::None);

/// Sets the boot's omission and reports it ([`Event::Omit`]). Call once,
/// at boot.
#[cfg(feature = "cache-check")]
pub fn set_omit(o: Omit) {
    // SAFETY: thread context at boot, single core, not re-entered.
    unsafe { OMIT.with(|v| *v = o) };
    event(Event::Omit, o as u32);
}

/// Whether this boot leaves `o` out: never without the feature
/// `cache-check` (a constant `false`, so the branch is compiled away).
#[inline(always)]
pub fn omitted(o: Omit) -> bool {
    #[cfg(feature = "cache-check")]
    {
        // SAFETY: a copy; written only at boot (`set_omit`).
        o != Omit::None && unsafe { OMIT.get() } == o
    }
    #[cfg(not(feature = "cache-check"))]
    {
        let _ = o;
        false
    }
}

#[cfg(feature = "cache-check")]
static TLB_OFF: crate::global::Global<bool> = crate::global::Global::new(false);

/// Runs `f`; if this boot leaves `o` out, with every TLB invalidation
/// through the counting platform dropped meanwhile
/// ([`tlb_omitted_now`]).
#[inline(always)]
pub fn omitting_tlb<R>(o: Omit, f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "cache-check")]
    if omitted(o) {
        // SAFETY: thread context, single core; `f` does not re-enter.
        unsafe { TLB_OFF.with(|v| *v = true) };
        let r = f();
        // SAFETY: as above.
        unsafe { TLB_OFF.with(|v| *v = false) };
        return r;
    }
    let _ = o;
    f()
}

/// Whether TLB invalidations are being left out now ([`omitting_tlb`]);
/// a constant `false` without the feature `cache-check`.
#[inline(always)]
pub fn tlb_omitted_now() -> bool {
    #[cfg(feature = "cache-check")]
    {
        // SAFETY: a copy of a flag written only by `omitting_tlb`.
        unsafe { TLB_OFF.get() }
    }
    #[cfg(not(feature = "cache-check"))]
    false
}
