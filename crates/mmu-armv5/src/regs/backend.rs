//! The CP15 access backend: the one trait through which every register read,
//! register write and maintenance operation in this workspace goes.
//!
//! Three implementations exist:
//! * [`HwCp15`](super::HwCp15): `MRC`/`MCR` instructions, only when built for
//!   bare-metal ARM (`cfg(all(target_arch = "arm", target_os = "none"))`);
//! * [`MockCp15`](super::MockCp15): a register file plus an in-order log of
//!   every write, per instance, for host tests;
//! * the `armv5-sim` crate's model, which gives each access its hardware effect.

use crate::maint::{LineOp, LineRange};

/// A CP15 register read with `MRC` or written with `MCR`.
///
/// The comment on each variant gives its `CRn, opc1, CRm, opc2` coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Cp15Reg {
    /// Main ID register (`c0, 0, c0, 0`), read-only.
    Midr,
    /// Cache type register (`c0, 0, c0, 1`), read-only.
    CacheType,
    /// TCM status register (`c0, 0, c0, 2`), read-only (ARM926EJ-S).
    TcmStatus,
    /// System control register (`c1, 0, c0, 0`).
    Sctlr,
    /// Translation table base register (`c2, 0, c0, 0`).
    Ttbr,
    /// Domain access control register (`c3, 0, c0, 0`).
    Dacr,
    /// Data fault status register (`c5, 0, c0, 0`).
    Dfsr,
    /// Instruction (prefetch) fault status register (`c5, 0, c0, 1`).
    Ifsr,
    /// Fault address register (`c6, 0, c0, 0`).
    Far,
    /// Data TCM region register (`c9, 0, c1, 0`, ARM926EJ-S).
    DtcmRegion,
    /// Instruction TCM region register (`c9, 0, c1, 1`, ARM926EJ-S).
    ItcmRegion,
    /// FCSE process ID register (`c13, 0, c0, 0`).
    Fcseidr,
}

impl Cp15Reg {
    /// Every register, in coordinate order.
    pub const ALL: [Cp15Reg; 12] = [
        Cp15Reg::Midr,
        Cp15Reg::CacheType,
        Cp15Reg::TcmStatus,
        Cp15Reg::Sctlr,
        Cp15Reg::Ttbr,
        Cp15Reg::Dacr,
        Cp15Reg::Dfsr,
        Cp15Reg::Ifsr,
        Cp15Reg::Far,
        Cp15Reg::DtcmRegion,
        Cp15Reg::ItcmRegion,
        Cp15Reg::Fcseidr,
    ];

    /// Dense index of the register (its position in [`Cp15Reg::ALL`]).
    #[inline]
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// A write-only CP15 maintenance operation (`MCR` to c7 or c8).
///
/// Operations marked "MVA" take a modified virtual address as their operand;
/// the others take zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Cp15Op {
    /// Invalidate the I-cache and D-cache (`c7, 0, c7, 0`). Discards dirty data.
    InvalidateIdCache,
    /// Invalidate the whole I-cache (`c7, 0, c5, 0`).
    InvalidateICache,
    /// Invalidate one I-cache line, MVA (`c7, 0, c5, 1`).
    InvalidateICacheLine,
    /// Invalidate the whole D-cache (`c7, 0, c6, 0`). Discards dirty data.
    InvalidateDCache,
    /// Invalidate one D-cache line, MVA (`c7, 0, c6, 1`). Discards dirty data.
    InvalidateDCacheLine,
    /// Clean one D-cache line, MVA (`c7, 0, c10, 1`).
    CleanDCacheLine,
    /// Clean and invalidate one D-cache line, MVA (`c7, 0, c14, 1`).
    CleanInvalidateDCacheLine,
    /// Drain the write buffer (`c7, 0, c10, 4`).
    DrainWriteBuffer,
    /// Allocate a D-cache line without a line fill, MVA (`c7, 0, c2, 5`; XScale only).
    AllocateDCacheLine,
    /// Invalidate the whole unified (I and D) TLB (`c8, 0, c7, 0`).
    InvalidateTlb,
    /// Invalidate one TLB entry, MVA (`c8, 0, c7, 1`).
    InvalidateTlbEntry,
    /// Invalidate the whole I-TLB (`c8, 0, c5, 0`).
    InvalidateITlb,
    /// Invalidate one I-TLB entry, MVA (`c8, 0, c5, 1`).
    InvalidateITlbEntry,
    /// Invalidate the whole D-TLB (`c8, 0, c6, 0`).
    InvalidateDTlb,
    /// Invalidate one D-TLB entry, MVA (`c8, 0, c6, 1`).
    InvalidateDTlbEntry,
}

/// Access to coprocessor 15.
///
/// # Safety of the methods
/// Reads have no side effects and are safe. Writes and maintenance operations
/// are `unsafe`: a wrong translation table base, domain setting, FCSE PID or
/// control bit, or a cache invalidate that discards dirty lines, changes what
/// memory the running program sees. The typed accessors in
/// [`Cp15Ext`](super::Cp15Ext) and the maintenance trait
/// [`CacheMaintenance`](crate::maint::CacheMaintenance) wrap these with the
/// contracts spelled out per register and operation.
pub trait Cp15 {
    /// Reads a register.
    fn read(&self, reg: Cp15Reg) -> u32;

    /// Writes a register.
    ///
    /// # Safety
    /// The caller upholds the contract of the register being written
    /// (see the typed setters in [`Cp15Ext`](super::Cp15Ext)). Read-only
    /// registers ignore writes.
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32);

    /// Performs a maintenance operation with operand `value` (an MVA or zero).
    ///
    /// # Safety
    /// Invalidating D-cache lines discards data that was never written back;
    /// the caller must know those lines hold nothing it needs.
    unsafe fn op(&mut self, op: Cp15Op, value: u32);

    /// Performs the line operation `op` on every line of `range`, lowest
    /// address first: [`Cp15::op`] with [`LineOp::cp15_op`] once per line.
    ///
    /// The provided method does exactly that (so a recording backend logs
    /// every line); `HwCp15` overrides it with an unrolled `MCR` loop (see
    /// [`crate::maint::RangeMaintenance`]). Call it only with an operation
    /// the CPU has ([`LineOp`] names which).
    ///
    /// # Safety
    /// As [`Cp15::op`] for every line of `range`: for
    /// [`LineOp::InvalidateD`], no line of the range holds data anyone needs.
    #[inline]
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        for a in range {
            // SAFETY: the caller's contract covers every line of the range.
            unsafe { self.op(op.cp15_op(), a.as_u32()) };
        }
    }

    /// ARM926EJ-S "test, clean and invalidate" (`MRC p15, 0, APSR_nzcv, c7, c14, 3`):
    /// cleans and invalidates some dirty D-cache lines and returns `true`
    /// once the whole D-cache is clean. Loop until it returns `true`.
    ///
    /// On a backend whose CPU lacks the operation this is a hardware
    /// undefined-instruction trap; call it only for ARM926-family CPUs.
    fn test_clean_invalidate_dcache(&mut self) -> bool;

    /// ARM926EJ-S "test and clean" (`MRC p15, 0, APSR_nzcv, c7, c10, 3`):
    /// like [`Cp15::test_clean_invalidate_dcache`] but keeps the lines valid.
    fn test_clean_dcache(&mut self) -> bool;
}

/// A CP15 lent by exclusive reference is the same CP15: every method,
/// including the provided [`Cp15::op_lines`], goes to the borrowed backend
/// (so `HwCp15`'s unrolled loop is kept). Lets a caller that owns its CPU
/// hand `&mut cpu` to an API that takes a backend by value for a while.
impl<T: Cp15 + ?Sized> Cp15 for &mut T {
    #[inline(always)]
    fn read(&self, reg: Cp15Reg) -> u32 {
        (**self).read(reg)
    }
    #[inline(always)]
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: the same CPU; the caller's contract is passed on as it is.
        unsafe { (**self).write(reg, value) }
    }
    #[inline(always)]
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: as for `write`.
        unsafe { (**self).op(op, value) }
    }
    #[inline(always)]
    unsafe fn op_lines(&mut self, op: LineOp, range: LineRange) {
        // SAFETY: as for `write`, for every line of `range`.
        unsafe { (**self).op_lines(op, range) }
    }
    #[inline(always)]
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        (**self).test_clean_invalidate_dcache()
    }
    #[inline(always)]
    fn test_clean_dcache(&mut self) -> bool {
        (**self).test_clean_dcache()
    }
}
