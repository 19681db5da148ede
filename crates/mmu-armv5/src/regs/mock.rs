//! [`MockCp15`]: a register file plus an in-order log of every write and
//! maintenance operation, for host tests.
//!
//! Available on every target (no `std`, no allocator): the log is a
//! fixed-capacity [`heapless::Vec`]. Each instance has its own state; there
//! are no globals, so tests run in parallel.
//!
//! Behaviour:
//! * Reads return the register file and are not logged.
//! * Every write is logged. Writes to the read-only registers (MIDR, cache
//!   type, TCM status) are logged but leave the register unchanged, as on
//!   hardware. Use [`MockCp15::set_register`] to set any register without
//!   logging (reset values, or a fault the test injects).
//! * Maintenance operations are logged with their operand and have no other effect.
//! * The test-and-clean operations report "dirty" for a configurable number
//!   of calls ([`MockCp15::set_dirty_iterations`]), then "clean". Each call is
//!   logged as [`Cp15Event::TestClean`] with the answer it gave.
//! * When the log is full, further events are counted in
//!   [`MockCp15::overflows`] and dropped; nothing panics.

use super::backend::{Cp15, Cp15Op, Cp15Reg};
use super::cache_type::CacheType;
use super::midr::Midr;

/// How many events a [`MockCp15`] records before counting overflows.
pub const MOCK_LOG_CAPACITY: usize = 512;

/// One logged CP15 access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Cp15Event {
    /// A register write and the value written.
    Write(Cp15Reg, u32),
    /// A maintenance operation and its operand.
    Op(Cp15Op, u32),
    /// A test-and-clean (`invalidate`: the clean-and-invalidate variant)
    /// and whether it reported the D-cache clean.
    TestClean {
        /// `true` for test, clean and invalidate (`c7, c14, 3`), `false` for test and clean (`c7, c10, 3`).
        invalidate: bool,
        /// The answer: `true` once the D-cache is clean.
        clean: bool,
    },
}

/// Test-and-clean reports dirty forever with this many dirty iterations.
pub const DIRTY_FOREVER: u32 = u32::MAX;

/// A recording CP15 backend for tests.
///
/// ```
/// use mmu_armv5::fault::{FaultKind, FaultLevel};
/// use mmu_armv5::regs::{Cp15Event, Cp15Ext, Cp15Reg, MockCp15, Ttbr};
/// use mmu_armv5::{FcsePid, PhysAddr, VirtAddr};
///
/// let mut cp15 = MockCp15::arm926();
/// assert_eq!(cp15.midr().bits(), 0x4106_9265); // QEMU's ARM926EJ-S
///
/// // Typed writes through `Cp15Ext` are logged in order.
/// let ttbr = Ttbr::new(PhysAddr::new(0x0000_4000))?;
/// // SAFETY: a mock only records the write; nothing runs under it.
/// unsafe { cp15.set_ttbr(ttbr) };
/// assert_eq!(cp15.ttbr().base(), PhysAddr::new(0x4000));
/// assert_eq!(cp15.take_events().as_slice(), &[Cp15Event::Write(Cp15Reg::Ttbr, 0x4000)]);
///
/// // A test stages an abort by setting registers, which logs nothing.
/// cp15.set_register(Cp15Reg::Dfsr, 0x17); // page translation fault, domain 1
/// cp15.set_register(Cp15Reg::Far, 0x0600_8010); // the MVA, under PID 3
/// assert_eq!(cp15.dfsr().fault().kind, FaultKind::Translation(FaultLevel::Page));
/// assert_eq!(cp15.far().va(FcsePid::new(3)?), VirtAddr::new(0x8010));
/// assert!(cp15.events().is_empty());
/// # Ok::<(), mmu_armv5::AddrError>(())
/// ```
#[derive(Clone, Debug)]
pub struct MockCp15 {
    regs: [u32; Cp15Reg::ALL.len()],
    log: heapless::Vec<Cp15Event, MOCK_LOG_CAPACITY>,
    overflows: u32,
    dirty_iterations: u32,
}

impl MockCp15 {
    /// A mock whose registers all read zero.
    #[must_use]
    pub const fn new() -> MockCp15 {
        MockCp15 {
            regs: [0; Cp15Reg::ALL.len()],
            log: heapless::Vec::new(),
            overflows: 0,
            dirty_iterations: 0,
        }
    }

    /// QEMU 7.2's `arm926` after reset: MIDR 0x41069265, cache type
    /// 0x01dd20d2, SCTLR 0x00090078, no TCM, everything else zero.
    #[must_use]
    pub const fn arm926() -> MockCp15 {
        MockCp15::new()
            .with_register(Cp15Reg::Midr, Midr::QEMU_ARM926.bits())
            .with_register(Cp15Reg::CacheType, CacheType::QEMU_ARM926.bits())
            .with_register(Cp15Reg::Sctlr, 0x0009_0078)
    }

    /// QEMU 7.2's `pxa255` (XScale) after reset: MIDR 0x69052d00, cache
    /// type 0x0d172172, SCTLR 0x00000078.
    #[must_use]
    pub const fn pxa255() -> MockCp15 {
        MockCp15::new()
            .with_register(Cp15Reg::Midr, Midr::QEMU_PXA255.bits())
            .with_register(Cp15Reg::CacheType, 0x0d17_2172)
            .with_register(Cp15Reg::Sctlr, 0x0000_0078)
    }

    /// A StrongARM SA-1110 (QEMU `collie`) after reset: MIDR 0x6901b119,
    /// SCTLR 0x00000070. The SA-1110 has no cache type register; like the
    /// hardware, the mock returns the MIDR for it.
    #[must_use]
    pub const fn sa1110() -> MockCp15 {
        MockCp15::new()
            .with_register(Cp15Reg::Midr, Midr::QEMU_SA1110.bits())
            .with_register(Cp15Reg::CacheType, Midr::QEMU_SA1110.bits())
            .with_register(Cp15Reg::Sctlr, 0x0000_0070)
    }

    /// This mock with `reg` set to `value` (builder form of [`MockCp15::set_register`]).
    #[must_use]
    pub const fn with_register(mut self, reg: Cp15Reg, value: u32) -> MockCp15 {
        self.regs[reg.index()] = value;
        self
    }

    /// Sets a register (read-only ones included) without logging anything.
    pub fn set_register(&mut self, reg: Cp15Reg, value: u32) {
        self.regs[reg.index()] = value;
    }

    /// The current value of a register, without logging anything.
    #[must_use]
    pub fn register(&self, reg: Cp15Reg) -> u32 {
        self.regs[reg.index()]
    }

    /// Makes the next `n` test-and-clean calls report "dirty"
    /// ([`DIRTY_FOREVER`]: every call does).
    pub fn set_dirty_iterations(&mut self, n: u32) {
        self.dirty_iterations = n;
    }

    /// How many more test-and-clean calls will report "dirty".
    #[must_use]
    pub fn dirty_iterations(&self) -> u32 {
        self.dirty_iterations
    }

    /// The events logged so far, oldest first.
    #[must_use]
    pub fn events(&self) -> &[Cp15Event] {
        &self.log
    }

    /// Returns the events logged so far and empties the log.
    pub fn take_events(&mut self) -> heapless::Vec<Cp15Event, MOCK_LOG_CAPACITY> {
        core::mem::take(&mut self.log)
    }

    /// Empties the log and resets the overflow counter (the registers keep their values).
    pub fn clear(&mut self) {
        self.log.clear();
        self.overflows = 0;
    }

    /// How many events were dropped because the log was full.
    #[must_use]
    pub fn overflows(&self) -> u32 {
        self.overflows
    }

    fn record(&mut self, e: Cp15Event) {
        if self.log.push(e).is_err() {
            self.overflows = self.overflows.saturating_add(1);
        }
    }

    fn test_clean(&mut self, invalidate: bool) -> bool {
        let clean = self.dirty_iterations == 0;
        if !clean && self.dirty_iterations != DIRTY_FOREVER {
            self.dirty_iterations -= 1;
        }
        self.record(Cp15Event::TestClean { invalidate, clean });
        clean
    }
}

impl Default for MockCp15 {
    fn default() -> Self {
        MockCp15::new()
    }
}

/// Whether `reg` ignores writes.
const fn read_only(reg: Cp15Reg) -> bool {
    matches!(reg, Cp15Reg::Midr | Cp15Reg::CacheType | Cp15Reg::TcmStatus)
}

impl Cp15 for MockCp15 {
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.regs[reg.index()]
    }

    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        self.record(Cp15Event::Write(reg, value));
        if !read_only(reg) {
            self.regs[reg.index()] = value;
        }
    }

    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        self.record(Cp15Event::Op(op, value));
    }

    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.test_clean(true)
    }

    fn test_clean_dcache(&mut self) -> bool {
        self.test_clean(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_logged_in_order_and_read_only_registers_ignore_them() {
        let mut m = MockCp15::arm926();
        // SAFETY: mock backend.
        unsafe {
            m.write(Cp15Reg::Midr, 0xdead_beef);
            m.write(Cp15Reg::Dacr, 0x55);
            m.op(Cp15Op::CleanDCacheLine, 0x1000);
        }
        assert_eq!(m.read(Cp15Reg::Midr), 0x4106_9265);
        assert_eq!(m.read(Cp15Reg::Dacr), 0x55);
        assert_eq!(
            m.events(),
            &[
                Cp15Event::Write(Cp15Reg::Midr, 0xdead_beef),
                Cp15Event::Write(Cp15Reg::Dacr, 0x55),
                Cp15Event::Op(Cp15Op::CleanDCacheLine, 0x1000),
            ]
        );
        let taken = m.take_events();
        assert_eq!(taken.len(), 3);
        assert!(m.events().is_empty());
        assert_eq!(
            m.read(Cp15Reg::Dacr),
            0x55,
            "taking the log keeps registers"
        );
    }

    #[test]
    fn every_register_is_separate() {
        let mut m = MockCp15::new();
        for (i, r) in Cp15Reg::ALL.into_iter().enumerate() {
            m.set_register(r, i as u32 + 100);
        }
        for (i, r) in Cp15Reg::ALL.into_iter().enumerate() {
            assert_eq!(m.read(r), i as u32 + 100);
            assert_eq!(m.register(r), i as u32 + 100);
        }
        assert!(m.events().is_empty(), "set_register does not log");
    }

    #[test]
    fn test_clean_reports_dirty_then_clean() {
        let mut m = MockCp15::new();
        m.set_dirty_iterations(2);
        assert!(!m.test_clean_dcache());
        assert!(!m.test_clean_invalidate_dcache());
        assert!(m.test_clean_invalidate_dcache());
        assert!(m.test_clean_dcache());
        assert_eq!(
            m.events(),
            &[
                Cp15Event::TestClean {
                    invalidate: false,
                    clean: false
                },
                Cp15Event::TestClean {
                    invalidate: true,
                    clean: false
                },
                Cp15Event::TestClean {
                    invalidate: true,
                    clean: true
                },
                Cp15Event::TestClean {
                    invalidate: false,
                    clean: true
                },
            ]
        );
        m.set_dirty_iterations(DIRTY_FOREVER);
        for _ in 0..10 {
            assert!(!m.test_clean_dcache());
        }
        assert_eq!(m.dirty_iterations(), DIRTY_FOREVER);
    }

    #[test]
    fn overflow_is_counted_not_fatal() {
        let mut m = MockCp15::new();
        for i in 0..(MOCK_LOG_CAPACITY as u32 + 7) {
            // SAFETY: mock backend.
            unsafe { m.op(Cp15Op::DrainWriteBuffer, i) };
        }
        assert_eq!(m.events().len(), MOCK_LOG_CAPACITY);
        assert_eq!(m.overflows(), 7);
        assert_eq!(
            m.events().last(),
            Some(&Cp15Event::Op(
                Cp15Op::DrainWriteBuffer,
                MOCK_LOG_CAPACITY as u32 - 1
            ))
        );
        m.clear();
        assert_eq!(m.overflows(), 0);
        assert!(m.events().is_empty());
    }

    #[test]
    fn instances_are_independent() {
        let mut a = MockCp15::arm926();
        let b = MockCp15::arm926();
        // SAFETY: mock backend.
        unsafe { a.write(Cp15Reg::Fcseidr, 1 << 25) };
        assert_eq!(b.read(Cp15Reg::Fcseidr), 0);
        assert!(b.events().is_empty());
    }

    #[test]
    fn presets() {
        assert_eq!(MockCp15::pxa255().read(Cp15Reg::Midr), 0x6905_2d00);
        let s = MockCp15::sa1110();
        assert_eq!(s.read(Cp15Reg::CacheType), 0x6901_b119);
        assert_eq!(s.read(Cp15Reg::Sctlr), 0x70);
    }
}
