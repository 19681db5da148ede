//! Checked copies between the kernel and the current process's memory.
//!
//! Every word goes through a probe (`LDRT`/`STRT`: user permissions, an
//! abort is caught, see [`crate::probe`]). An abort the strategy can resolve
//! (a FASS lazy CPD fill or collision) is resolved and the access retried;
//! any other is `EFAULT`. So a bad pointer, a kernel pointer or an unmapped
//! page never faults the kernel.

use super::frames::{FRAMES_END, FRAMES_PHYS};
use super::kernel::Kernel;
use super::syscall::SysError;
use crate::probe::{probe_read, probe_write, Privilege};
use fass::{CopyFault, CopyMemory};
use mmu_armv5::regs::{Far, Fsr};
use mmu_armv5::{ModifiedVirtAddr, PhysAddr};

/// Attempts per word (one retry after each resolved abort).
const ATTEMPTS: usize = 4;

impl Kernel {
    /// Loads the user word at `va` (word aligned).
    pub fn read_user_word(&mut self, va: u32) -> Result<u32, SysError> {
        for _ in 0..ATTEMPTS {
            match probe_read(va, Privilege::User) {
                Ok(v) => return Ok(v),
                Err(f) => {
                    if !self.resolve(Fsr::from_bits(f.dfsr), Far::from_bits(f.far)) {
                        return Err(SysError::Fault);
                    }
                    self.counters.copy_faults += 1;
                }
            }
        }
        Err(SysError::Fault)
    }

    /// Stores `value` at the user word `va` (word aligned).
    pub fn write_user_word(&mut self, va: u32, value: u32) -> Result<(), SysError> {
        for _ in 0..ATTEMPTS {
            // SAFETY: a store with user permissions: it can only reach
            // memory the current process may write, never the kernel's.
            match unsafe { probe_write(va, value, Privilege::User) } {
                Ok(()) => return Ok(()),
                Err(f) => {
                    if !self.resolve(Fsr::from_bits(f.dfsr), Far::from_bits(f.far)) {
                        return Err(SysError::Fault);
                    }
                    self.counters.copy_faults += 1;
                }
            }
        }
        Err(SysError::Fault)
    }

    /// Copies `buf.len()` bytes from user address `va` into `buf`.
    pub fn copy_from_user(&mut self, va: u32, buf: &mut [u8]) -> Result<(), SysError> {
        let len = buf.len() as u32;
        let end = va.checked_add(len).ok_or(SysError::Invalid)?;
        let mut w = va & !3;
        while w < end {
            let word = self.read_user_word(w)?.to_le_bytes();
            for (k, b) in word.iter().enumerate() {
                let a = w + k as u32;
                if a >= va && a < end {
                    buf[(a - va) as usize] = *b;
                }
            }
            w += 4;
        }
        Ok(())
    }

    /// Copies `words` to the word-aligned user address `va`.
    pub fn copy_to_user(&mut self, va: u32, words: &[u32]) -> Result<(), SysError> {
        if !va.is_multiple_of(4) {
            return Err(SysError::Invalid);
        }
        va.checked_add(words.len() as u32 * 4)
            .ok_or(SysError::Invalid)?;
        for (k, w) in words.iter().enumerate() {
            self.write_user_word(va + 4 * k as u32, *w)?;
        }
        Ok(())
    }

    /// Checks that the current process may read (or, `write`, write) every
    /// byte of `[va, va + len)`: one probe per page the range touches
    /// (with user permissions, as every access here; a write probe stores
    /// back the word it read). `Invalid` if the range wraps.
    pub fn check_user_buffer(&mut self, va: u32, len: u32, write: bool) -> Result<(), SysError> {
        if len == 0 {
            return Ok(());
        }
        let end = va.checked_add(len).ok_or(SysError::Invalid)?;
        let mut at = va & !3;
        while at < end {
            let v = self.read_user_word(at)?;
            if write {
                self.write_user_word(at, v)?;
            }
            at = (at & !0xFFF).checked_add(0x1000).unwrap_or(end);
        }
        Ok(())
    }
}

core::arch::global_asm!(include_str!("../asm/copy_words.s"), options(raw));

extern "C" {
    /// Copies `len` bytes from `src` to `dst`, eight words per
    /// `ldmia`/`stmia` (`asm/copy_words.s`): the same routine the user
    /// program's plain copy runs, so the benchmark compares the IPC around
    /// the copy, not two copies.
    ///
    /// # Safety
    /// `dst`, `src` and `len` multiples of 4; both ranges mapped, `dst`
    /// writable, apart.
    fn copy_words(dst: *mut u32, src: *const u32, len: u32);
}

/// User memory as the kernel copies it between address spaces (long IPC,
/// [`fass::SwitchStrategy::copy_between`]): plain loads and stores at the
/// addresses the strategy hands over (FASS: the spaces' FCSE windows; the
/// others: the kernel's linear map of the user frames).
pub struct KernelMemory;

// SAFETY: the linear-map address of a user frame (the frame allocator's
// range, which holds no kernel object: only user pages, and the in-kernel
// tests' scratch MiBs lie elsewhere) is mapped for privileged read and
// write in the kernel's domain in the kernel's table, whose kernel entries
// every strategy's tables hold.
unsafe impl<S: ?Sized> CopyMemory<S> for KernelMemory {
    fn kernel_alias(&self, pa: PhysAddr) -> Option<ModifiedVirtAddr> {
        let pa = pa.as_u32();
        (FRAMES_PHYS..FRAMES_END)
            .contains(&pa)
            .then(|| ModifiedVirtAddr::new(crate::mmu::phys_to_virt(pa)))
    }

    unsafe fn copy(
        &mut self,
        _sys: &mut S,
        dst: ModifiedVirtAddr,
        src: ModifiedVirtAddr,
        len: u32,
    ) -> Result<(), CopyFault> {
        let (d, sp) = (dst.as_u32(), src.as_u32());
        if (d | sp | len) & 3 == 0 {
            // SAFETY: the caller's contract: both ranges mapped for
            // privileged access now, `dst` writable, no overlap, neither
            // memory Rust code holds a reference to (user frames); all
            // three word multiples, as `copy_words` requires.
            unsafe { copy_words(d as *mut u32, sp as *const u32, len) };
        } else {
            // SAFETY: as above.
            unsafe {
                core::ptr::copy_nonoverlapping(sp as *const u8, d as *mut u8, len as usize);
            }
        }
        Ok(())
    }
}
