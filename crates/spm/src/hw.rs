//! Ready-made hardware side of an exchange: the CPU joined with physical
//! memory access ([`Hw`]), one CPU value shared with the page-table side
//! ([`SharedCpu`]), physical memory reached through kernel mappings
//! ([`PhysWindows`]), and interrupt masking ([`CpsrIrq`] on the target,
//! [`RecordingIrq`] for host tests).
//!
//! An exchange step wants one value that is at once [`PhysMemory`],
//! [`LineMaintenance`] (so [`CacheMaintenance`]) and [`Cp15`]. A kernel's
//! CPU value (say `Arm926<HwCp15>`) and these traits all come from other
//! crates, so the kernel could not join them itself without a newtype that
//! forwards every method; [`Hw`] is that newtype, once, here:
//!
//! ```
//! use mmu_armv5::maint::Arm926;
//! use mmu_armv5::regs::MockCp15;
//! use mmu_armv5::PhysAddr;
//! use spm::{Hw, PhysMemory, PhysWindows};
//!
//! let mut ram = vec![0u8; 8192]; // stands for physical 0x4000_0000..+8 KiB
//! let mut phys = PhysWindows::<1>::new();
//! // SAFETY: the buffer is only reached through `phys` while it lives.
//! unsafe { phys.add(PhysAddr::new(0x4000_0000), 8192, ram.as_mut_ptr()) }?;
//! let mut hw = Hw::new(Arm926::new(MockCp15::arm926()), phys);
//!
//! hw.phys.write(PhysAddr::new(0x4000_0010), b"TCM!")?;
//! hw.copy(PhysAddr::new(0x4000_1000), PhysAddr::new(0x4000_0000), 32);
//! let mut got = [0; 4];
//! hw.phys.read(PhysAddr::new(0x4000_1010), &mut got)?;
//! assert_eq!(&got, b"TCM!");
//! # Ok::<(), spm::PhysError>(())
//! ```

use crate::irq::InterruptControl;
use crate::lines::LineMaintenance;
use crate::phys::PhysMemory;
use core::cell::RefCell;
use core::fmt;
use core::ptr::NonNull;
use mmu_armv5::irq::{self, IrqState};
use mmu_armv5::maint::{CacheMaintenance, TrustedMaintenance};
use mmu_armv5::regs::{Cp15, Cp15Op, Cp15Reg};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};

/// A CPU (`C`: its [`CacheMaintenance`] and [`Cp15`], e.g.
/// `Arm926<HwCp15>`, or the `armv5-sim` machine) joined with physical
/// memory access (`P`: [`PhysMemory`], e.g. [`PhysWindows`]): every trait
/// an exchange step needs of its `hw`, by forwarding.
///
/// [`LineMaintenance`] keeps its per-line defaults over `C`'s maintenance.
/// A kernel that wants tighter range loops (one `MCR` and one `ADD` per
/// line) implements [`LineMaintenance`] on a type of its own instead.
#[derive(Debug, Default)]
pub struct Hw<C, P> {
    /// The CPU: caches, TLB, CP15 registers.
    pub cpu: C,
    /// Physical memory access.
    pub phys: P,
}

impl<C, P> Hw<C, P> {
    /// Joins `cpu` and `phys`.
    pub const fn new(cpu: C, phys: P) -> Hw<C, P> {
        Hw { cpu, phys }
    }

    /// The two parts again.
    pub fn into_parts(self) -> (C, P) {
        (self.cpu, self.phys)
    }
}

impl<C, P: PhysMemory> PhysMemory for Hw<C, P> {
    #[inline]
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        self.phys.copy(dst, src, len);
    }

    #[inline]
    fn zero(&mut self, dst: PhysAddr, len: u32) {
        self.phys.zero(dst, len);
    }
}

impl<C: CacheMaintenance, P> LineMaintenance for Hw<C, P> {}

// SAFETY: every maintenance method forwards to `self.cpu`, which keeps
// the promise.
unsafe impl<C: TrustedMaintenance, P> TrustedMaintenance for Hw<C, P> {}

impl<C: CacheMaintenance, P> CacheMaintenance for Hw<C, P> {
    const DCACHE_LINE: u32 = C::DCACHE_LINE;

    #[inline]
    fn clean_invalidate_dcache(&mut self) {
        self.cpu.clean_invalidate_dcache();
    }

    #[inline]
    fn invalidate_icache(&mut self) {
        self.cpu.invalidate_icache();
    }

    #[inline]
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.cpu.clean_dcache_line(mva);
    }

    #[inline]
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.cpu.clean_invalidate_dcache_line(mva);
    }

    #[inline]
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.cpu.invalidate_dcache_line(mva) }
    }

    #[inline]
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.cpu.invalidate_icache_line(mva);
    }

    #[inline]
    fn drain_write_buffer(&mut self) {
        self.cpu.drain_write_buffer();
    }

    #[inline]
    fn invalidate_tlb(&mut self) {
        self.cpu.invalidate_tlb();
    }

    #[inline]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.cpu.invalidate_tlb_entry(mva);
    }

    #[inline]
    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.cpu.clean_dcache_range(mva, len);
    }

    #[inline]
    fn flush_all(&mut self) {
        self.cpu.flush_all();
    }
}

impl<C: Cp15, P> Cp15 for Hw<C, P> {
    #[inline]
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.cpu.read(reg)
    }

    #[inline]
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.cpu.write(reg, value) }
    }

    #[inline]
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.cpu.op(op, value) }
    }

    #[inline]
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.cpu.test_clean_invalidate_dcache()
    }

    #[inline]
    fn test_clean_dcache(&mut self) -> bool {
        self.cpu.test_clean_dcache()
    }
}

/// One CPU value used by two holders that `spm` takes as two `&mut`
/// arguments: the exchange's `hw` (a [`Hw`]) and the maintenance of
/// [`crate::TableMappings`] (which cleans the table lines it writes). Each
/// call borrows the CPU for its own duration only, and `spm` never calls
/// one holder from inside the other.
///
/// ```
/// use core::cell::RefCell;
/// use mmu_armv5::maint::{Arm926, CacheMaintenance};
/// use mmu_armv5::regs::MockCp15;
/// use mmu_armv5::ModifiedVirtAddr;
/// use spm::SharedCpu;
///
/// let cpu = RefCell::new(Arm926::new(MockCp15::arm926()));
/// let (mut a, mut b) = (SharedCpu(&cpu), SharedCpu(&cpu));
/// a.clean_dcache_line(ModifiedVirtAddr::new(0x1000));
/// b.invalidate_tlb_entry(ModifiedVirtAddr::new(0x1000));
/// assert_eq!(cpu.borrow().cp15().events().len(), 2);
/// ```
///
/// # Panics
/// A call made while the CPU is borrowed already: only when a holder is
/// used from inside a call of the other (an interrupt handler using one
/// while `spm` runs the other, say), which `spm` never does.
#[derive(Debug)]
pub struct SharedCpu<'c, C>(pub &'c RefCell<C>);

impl<C> Clone for SharedCpu<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for SharedCpu<'_, C> {}

// SAFETY: every method forwards to the shared value, which keeps the
// promise.
unsafe impl<C: TrustedMaintenance> TrustedMaintenance for SharedCpu<'_, C> {}

impl<C: CacheMaintenance> CacheMaintenance for SharedCpu<'_, C> {
    const DCACHE_LINE: u32 = C::DCACHE_LINE;

    #[inline]
    fn clean_invalidate_dcache(&mut self) {
        self.0.borrow_mut().clean_invalidate_dcache();
    }

    #[inline]
    fn invalidate_icache(&mut self) {
        self.0.borrow_mut().invalidate_icache();
    }

    #[inline]
    fn clean_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.borrow_mut().clean_dcache_line(mva);
    }

    #[inline]
    fn clean_invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.borrow_mut().clean_invalidate_dcache_line(mva);
    }

    #[inline]
    unsafe fn invalidate_dcache_line(&mut self, mva: ModifiedVirtAddr) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.0.borrow_mut().invalidate_dcache_line(mva) }
    }

    #[inline]
    fn invalidate_icache_line(&mut self, mva: ModifiedVirtAddr) {
        self.0.borrow_mut().invalidate_icache_line(mva);
    }

    #[inline]
    fn drain_write_buffer(&mut self) {
        self.0.borrow_mut().drain_write_buffer();
    }

    #[inline]
    fn invalidate_tlb(&mut self) {
        self.0.borrow_mut().invalidate_tlb();
    }

    #[inline]
    fn invalidate_tlb_entry(&mut self, mva: ModifiedVirtAddr) {
        self.0.borrow_mut().invalidate_tlb_entry(mva);
    }

    #[inline]
    fn clean_dcache_range(&mut self, mva: ModifiedVirtAddr, len: u32) {
        self.0.borrow_mut().clean_dcache_range(mva, len);
    }

    #[inline]
    fn flush_all(&mut self) {
        self.0.borrow_mut().flush_all();
    }
}

impl<C: Cp15> Cp15 for SharedCpu<'_, C> {
    #[inline]
    fn read(&self, reg: Cp15Reg) -> u32 {
        self.0.borrow().read(reg)
    }

    #[inline]
    unsafe fn write(&mut self, reg: Cp15Reg, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.0.borrow_mut().write(reg, value) }
    }

    #[inline]
    unsafe fn op(&mut self, op: Cp15Op, value: u32) {
        // SAFETY: forwarded; the caller upholds the same contract.
        unsafe { self.0.borrow_mut().op(op, value) }
    }

    #[inline]
    fn test_clean_invalidate_dcache(&mut self) -> bool {
        self.0.borrow_mut().test_clean_invalidate_dcache()
    }

    #[inline]
    fn test_clean_dcache(&mut self) -> bool {
        self.0.borrow_mut().test_clean_dcache()
    }
}

/// Why [`PhysWindows`] refused a window or an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PhysError {
    /// A window of zero bytes, or a null pointer.
    Empty,
    /// The physical range passes the end of the 32-bit address space.
    Wraps,
    /// The window overlaps one added before (at this physical address).
    Overlap(PhysAddr),
    /// Every window slot is taken.
    Full,
    /// No single window covers `[pa, pa + len)`.
    Outside {
        /// Start of the range.
        pa: PhysAddr,
        /// Its length.
        len: u32,
    },
}

impl fmt::Display for PhysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PhysError::Empty => f.write_str("empty window or null pointer"),
            PhysError::Wraps => f.write_str("window passes 4 GiB"),
            PhysError::Overlap(pa) => write!(f, "window overlaps the one at {pa}"),
            PhysError::Full => f.write_str("no window slot left"),
            PhysError::Outside { pa, len } => {
                write!(f, "{len:#x} bytes at {pa} are not inside one window")
            }
        }
    }
}

impl core::error::Error for PhysError {}

/// One physical range and where the program reaches it.
#[derive(Clone, Copy, Debug)]
struct Window {
    pa: u32,
    len: u32,
    at: NonNull<u8>,
}

/// [`PhysMemory`] through up to `N` windows: physical ranges the kernel
/// reaches at fixed virtual addresses (an uncached linear map of RAM, a
/// TCM's own address; or, in a host test, buffers standing for them).
///
/// Copies and zeroing use 32-bit volatile accesses when both addresses and
/// the length are word aligned (every call `spm` makes), bytes otherwise.
/// A range that no single window covers is not touched: [`PhysMemory`]
/// has no way to report it, so it is counted ([`PhysWindows::misses`]);
/// describe every region of the frame table with a window
/// ([`PhysWindows::covers`] checks one) and it never happens.
#[derive(Debug)]
pub struct PhysWindows<const N: usize> {
    windows: heapless::Vec<Window, N>,
    misses: u32,
}

impl<const N: usize> Default for PhysWindows<N> {
    fn default() -> Self {
        PhysWindows::new()
    }
}

impl<const N: usize> PhysWindows<N> {
    /// No windows yet.
    pub const fn new() -> PhysWindows<N> {
        PhysWindows {
            windows: heapless::Vec::new(),
            misses: 0,
        }
    }

    /// Adds the window: physical `[pa, pa + len)` is reached at `at`.
    ///
    /// # Errors
    /// [`PhysError::Empty`] for `len == 0` or a null `at`,
    /// [`PhysError::Wraps`], [`PhysError::Overlap`] with an earlier window,
    /// [`PhysError::Full`].
    ///
    /// # Safety
    /// For as long as this value is used, `at` is valid for volatile reads
    /// and writes of `len` bytes, and those reach the physical memory
    /// `[pa, pa + len)` itself: an uncached mapping of it (C = 0) on the
    /// target, so that what is written is in memory on return as
    /// [`PhysMemory`] requires (TCM is never cached). Nothing reaches those
    /// bytes through Rust references meanwhile: `spm` copies into and
    /// zeroes page resources through this value.
    pub unsafe fn add(&mut self, pa: PhysAddr, len: u32, at: *mut u8) -> Result<(), PhysError> {
        let at = NonNull::new(at).ok_or(PhysError::Empty)?;
        if len == 0 {
            return Err(PhysError::Empty);
        }
        let end = u64::from(pa.as_u32()) + u64::from(len);
        if end > 1 << 32 {
            return Err(PhysError::Wraps);
        }
        for w in &self.windows {
            if u64::from(w.pa) < end && u64::from(pa.as_u32()) < u64::from(w.pa) + u64::from(w.len)
            {
                return Err(PhysError::Overlap(PhysAddr::new(w.pa)));
            }
        }
        self.windows
            .push(Window {
                pa: pa.as_u32(),
                len,
                at,
            })
            .map_err(|_| PhysError::Full)
    }

    /// Where `[pa, pa + len)` is reached, if one window covers all of it.
    fn locate(&self, pa: PhysAddr, len: u32) -> Option<NonNull<u8>> {
        let start = pa.as_u32();
        self.windows.iter().find_map(|w| {
            let off = start.checked_sub(w.pa)?;
            if u64::from(off) + u64::from(len) > u64::from(w.len) {
                return None;
            }
            // SAFETY: `off + len <= w.len`: inside the window's allocation
            // (the `add` caller's promise).
            Some(unsafe { w.at.add(off as usize) })
        })
    }

    /// Whether one window covers all of `[pa, pa + len)`.
    #[must_use]
    pub fn covers(&self, pa: PhysAddr, len: u32) -> bool {
        self.locate(pa, len).is_some()
    }

    /// [`PhysMemory`] calls that touched nothing because no window covers
    /// their range (zero when every region `spm` works on has a window).
    #[must_use]
    pub const fn misses(&self) -> u32 {
        self.misses
    }

    /// Reads `buf.len()` bytes of physical memory at `pa`.
    ///
    /// # Errors
    /// [`PhysError::Outside`] (nothing read) when no window covers the range.
    pub fn read(&self, pa: PhysAddr, buf: &mut [u8]) -> Result<(), PhysError> {
        let len = u32::try_from(buf.len()).map_err(|_| PhysError::Wraps)?;
        let at = self.locate(pa, len).ok_or(PhysError::Outside { pa, len })?;
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: inside the window (`locate`), valid for reads (the
            // `add` caller's promise).
            *b = unsafe { at.add(i).read_volatile() };
        }
        Ok(())
    }

    /// Writes `data` to physical memory at `pa`.
    ///
    /// # Errors
    /// [`PhysError::Outside`] (nothing written) when no window covers the
    /// range.
    pub fn write(&mut self, pa: PhysAddr, data: &[u8]) -> Result<(), PhysError> {
        let len = u32::try_from(data.len()).map_err(|_| PhysError::Wraps)?;
        let at = self.locate(pa, len).ok_or(PhysError::Outside { pa, len })?;
        for (i, b) in data.iter().enumerate() {
            // SAFETY: inside the window (`locate`), valid for writes (the
            // `add` caller's promise).
            unsafe { at.add(i).write_volatile(*b) };
        }
        Ok(())
    }
}

/// Whether word accesses fit: both addresses and the length word aligned.
fn words(a: NonNull<u8>, b: NonNull<u8>, len: u32) -> bool {
    (a.as_ptr() as usize | b.as_ptr() as usize | len as usize) & 3 == 0
}

impl<const N: usize> PhysMemory for PhysWindows<N> {
    fn copy(&mut self, dst: PhysAddr, src: PhysAddr, len: u32) {
        let (Some(d), Some(s)) = (self.locate(dst, len), self.locate(src, len)) else {
            self.misses = self.misses.saturating_add(1);
            return;
        };
        if words(d, s, len) {
            let (d, s) = (d.cast::<u32>(), s.cast::<u32>());
            for i in 0..(len / 4) as usize {
                // SAFETY: both ranges lie inside windows (`locate`), valid
                // for volatile access (the `add` callers' promise); word
                // aligned (checked); `spm` never passes overlapping ranges.
                unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
            }
        } else {
            for i in 0..len as usize {
                // SAFETY: as above, byte by byte.
                unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) };
            }
        }
    }

    fn zero(&mut self, dst: PhysAddr, len: u32) {
        let Some(d) = self.locate(dst, len) else {
            self.misses = self.misses.saturating_add(1);
            return;
        };
        if words(d, d, len) {
            let d = d.cast::<u32>();
            for i in 0..(len / 4) as usize {
                // SAFETY: inside a window (`locate`), valid for volatile
                // writes (the `add` caller's promise), word aligned.
                unsafe { d.add(i).write_volatile(0) };
            }
        } else {
            for i in 0..len as usize {
                // SAFETY: as above, byte by byte.
                unsafe { d.add(i).write_volatile(0) };
            }
        }
    }
}

/// [`InterruptControl`] over [`mmu_armv5::irq`]: masks IRQ and FIQ (the
/// CPSR's I and F bits) and puts back exactly the bits it found.
///
/// On bare-metal ARM that is the CPU's CPSR; elsewhere `mmu_armv5::irq`'s
/// simulated, process-wide bits. Masked windows nest: only the outermost
/// [`InterruptControl::restore`] (the one whose `disable` found
/// interrupts not both masked) unmasks.
#[derive(Debug)]
pub struct CpsrIrq {
    /// What the outermost open window found.
    saved: IrqState,
    /// Whether such a window is open.
    open: bool,
}

impl CpsrIrq {
    /// Interrupt control over the running CPU's masks.
    ///
    /// # Safety
    /// [`InterruptControl`] is a safe trait, so the `unsafe` promise of
    /// [`mmu_armv5::irq::restore`] is made here, once: every
    /// [`InterruptControl::restore`] on this value ends the window of the
    /// `disable` that opened it, and no masked section begun after that
    /// `disable` (a critical section, an `irq::mask`) is still open then.
    /// Handing the value only to `spm`'s calls keeps this: each of them
    /// pairs every `disable` with its `restore` and opens nothing else.
    #[must_use]
    pub const unsafe fn new() -> CpsrIrq {
        CpsrIrq {
            saved: IrqState::MASKED,
            open: false,
        }
    }
}

impl InterruptControl for CpsrIrq {
    fn disable(&mut self) -> bool {
        let prev = irq::mask();
        let was_enabled = prev != IrqState::MASKED;
        if was_enabled {
            self.saved = prev;
            self.open = true;
        }
        was_enabled
    }

    fn restore(&mut self, was_enabled: bool) {
        if was_enabled && self.open {
            self.open = false;
            // SAFETY: `saved` came from the `mask` of the window this ends
            // (the outermost one open); the constructor's caller promised
            // that no section begun inside it is still open.
            unsafe { irq::restore(self.saved) };
        }
    }
}

/// [`InterruptControl`] for host tests: a flag standing for the mask, and
/// a count of the masked windows opened from the unmasked state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordingIrq {
    masked: bool,
    windows: u32,
}

impl RecordingIrq {
    /// Interrupts enabled, no window yet.
    #[must_use]
    pub const fn new() -> RecordingIrq {
        RecordingIrq {
            masked: false,
            windows: 0,
        }
    }

    /// Whether interrupts are masked now.
    #[must_use]
    pub const fn is_masked(&self) -> bool {
        self.masked
    }

    /// Masked windows opened so far (nested ones not counted).
    #[must_use]
    pub const fn windows(&self) -> u32 {
        self.windows
    }
}

impl InterruptControl for RecordingIrq {
    fn disable(&mut self) -> bool {
        let was_enabled = !self.masked;
        if was_enabled {
            self.windows += 1;
        }
        self.masked = true;
        was_enabled
    }

    fn restore(&mut self, was_enabled: bool) {
        if was_enabled {
            self.masked = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::irq::without_interrupts;
    use mmu_armv5::maint::Arm926;
    use mmu_armv5::regs::{Cp15Event, MockCp15};
    use std::vec;

    fn pa(a: u32) -> PhysAddr {
        PhysAddr::new(a)
    }

    #[test]
    fn windows_refuse_bad_ranges() {
        let mut buf = vec![0u8; 64];
        let p = buf.as_mut_ptr();
        let mut w = PhysWindows::<2>::new();
        // SAFETY: (each call) `buf` outlives `w` and is used only through it.
        unsafe {
            assert_eq!(w.add(pa(0), 0, p), Err(PhysError::Empty));
            assert_eq!(
                w.add(pa(0), 64, core::ptr::null_mut()),
                Err(PhysError::Empty)
            );
            assert_eq!(w.add(pa(0xFFFF_FFF0), 64, p), Err(PhysError::Wraps));
            assert_eq!(w.add(pa(0x100), 32, p), Ok(()));
            assert_eq!(w.add(pa(0xF0), 32, p), Err(PhysError::Overlap(pa(0x100))));
            assert_eq!(w.add(pa(0x120), 32, p.add(32)), Ok(()));
            assert_eq!(w.add(pa(0x200), 1, p), Err(PhysError::Full));
        }
        assert!(w.covers(pa(0x100), 32) && w.covers(pa(0x11C), 4));
        // Adjacent windows are still two: no range crosses between them.
        assert!(!w.covers(pa(0x11C), 8));
        assert_eq!(
            w.write(pa(0x13F), &[1, 2]),
            Err(PhysError::Outside {
                pa: pa(0x13F),
                len: 2
            })
        );
        w.copy(pa(0x100), pa(0x11C), 8);
        w.zero(pa(0x1000), 4);
        assert_eq!(w.misses(), 2);
        assert!(buf.iter().all(|&b| b == 0), "nothing was written");
    }

    #[test]
    fn windows_copy_and_zero_words_and_bytes() {
        let mut buf: std::vec::Vec<u32> = vec![0; 64];
        let p = buf.as_mut_ptr().cast::<u8>();
        let mut w = PhysWindows::<1>::new();
        // SAFETY: `buf` outlives `w` and is used only through it.
        unsafe { w.add(pa(0x1000), 256, p) }.unwrap();
        let data: std::vec::Vec<u8> = (0..64).collect();
        w.write(pa(0x1000), &data).unwrap();
        w.copy(pa(0x1080), pa(0x1000), 64); // words
        w.copy(pa(0x10C1), pa(0x1001), 7); // bytes
        w.zero(pa(0x1084), 8); // words
        w.zero(pa(0x1091), 2); // bytes
        let mut got = [0u8; 0x50];
        w.read(pa(0x1080), &mut got).unwrap();
        let mut want = [0u8; 0x50];
        want[..64].copy_from_slice(&data);
        want[4..12].fill(0);
        want[0x11..0x13].fill(0);
        want[0x41..0x48].copy_from_slice(&data[1..8]);
        assert_eq!(got, want);
        assert_eq!(w.misses(), 0);
    }

    #[test]
    fn hw_forwards_to_its_parts() {
        let mut buf = vec![0u8; 64];
        let mut phys = PhysWindows::<1>::new();
        // SAFETY: `buf` outlives `phys` and is used only through it.
        unsafe { phys.add(pa(0), 64, buf.as_mut_ptr()) }.unwrap();
        let mut hw = Hw::new(Arm926::new(MockCp15::arm926()), phys);
        hw.phys.write(pa(0), &[7; 4]).unwrap();
        hw.copy(pa(32), pa(0), 4);
        hw.clean_dcache_lines(ModifiedVirtAddr::new(0x1000), 64);
        hw.invalidate_tlb_entry(ModifiedVirtAddr::new(0x2000));
        // SAFETY: a mock CPU.
        unsafe { hw.write(Cp15Reg::Ttbr, 0x4000) };
        assert_eq!(hw.read(Cp15Reg::Ttbr), 0x4000);
        assert_eq!(
            <Hw<Arm926<MockCp15>, PhysWindows<1>> as CacheMaintenance>::DCACHE_LINE,
            32
        );
        let (cpu, phys) = hw.into_parts();
        let ops: std::vec::Vec<_> = cpu
            .cp15()
            .events()
            .iter()
            .filter_map(|e| match e {
                Cp15Event::Op(op, value) => Some((*op, *value)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ops,
            [
                (Cp15Op::CleanDCacheLine, 0x1000),
                (Cp15Op::CleanDCacheLine, 0x1020),
                (Cp15Op::InvalidateTlbEntry, 0x2000),
            ]
        );
        let mut got = [0; 4];
        phys.read(pa(32), &mut got).unwrap();
        assert_eq!(got, [7; 4]);
    }

    #[test]
    fn recording_irq_counts_outermost_windows() {
        let mut irq = RecordingIrq::new();
        without_interrupts(&mut irq, || ());
        let was = irq.disable();
        assert!(was && irq.is_masked());
        let inner = irq.disable();
        assert!(!inner);
        irq.restore(inner);
        assert!(irq.is_masked(), "the inner restore keeps the mask");
        irq.restore(was);
        assert!(!irq.is_masked());
        assert_eq!(irq.windows(), 2);
    }

    #[test]
    fn cpsr_irq_nests_and_restores_exactly() {
        // SAFETY: the windows below nest and open nothing else.
        let mut c = unsafe { CpsrIrq::new() };
        // A stray restore, without a window, unmasks nothing.
        let before = irq::current();
        c.restore(true);
        assert_eq!(irq::current(), before);
        let was = c.disable();
        assert_eq!(irq::current(), IrqState::MASKED);
        let inner = c.disable();
        assert!(!inner);
        c.restore(inner);
        assert_eq!(irq::current(), IrqState::MASKED);
        c.restore(was);
        assert_eq!(irq::current(), before);
    }
}
