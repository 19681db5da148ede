//! On the hardware (bare-metal ARM only): the backends behind the generic
//! steps, and the boot sequence with them.

use fass::Split;
use mmu_armv5::maint::Arm926;
use mmu_armv5::regs::HwCp15;
use mmu_armv5::table::{PoolBlock, TablePool};
use mmu_armv5::{PhysAddr, VirtAddr};
use spm::tcm::TcmLayout;
use spm::{ExchangeStats, FrameTable, PhysWindows};

use crate::{boot, layout, plan_tcm, Board, DtcmSlot, Error, Vm, PHYS_WINDOWS, POOL_BLOCKS};

/// The CPU: an ARM926EJ-S's maintenance over the real CP15 (an XScale
/// board uses `mmu_armv5::maint::XScale`, a StrongARM one `Sa1100`).
pub type Cpu = Arm926<HwCp15>;

/// The platform `fass` drives: the CPU and the board's table pool.
pub type Sys = Split<Cpu, TablePool<'static, POOL_BLOCKS>>;

/// The memory-management state after [`bring_up`].
pub struct Kernel {
    /// CPU and table memory.
    pub sys: Sys,
    /// The address spaces.
    pub vm: Vm,
    /// The TCM banks in effect.
    pub banks: TcmLayout,
}

/// The CPU this code runs on.
///
/// # Safety
/// Called in a privileged mode, once: the result is the only owner of
/// CP15 state changes (`HwCp15::new`).
pub unsafe fn cpu() -> Cpu {
    // SAFETY: the caller's promise.
    Arm926::new(unsafe { HwCp15::new() })
}

/// Steps 1 to 3 on the hardware: the layout, TCM, the kernel's table and
/// the CPD, with `pool` (the board's table pool, a `static` at
/// `board.table_pool`) as table memory.
///
/// # Safety
/// As [`cpu`], [`plan_tcm`] and [`boot`]: called once, early, in a
/// privileged mode, on the board `board` describes, with `pool` at
/// `board.table_pool` (virtual `board.table_pool_va`).
pub unsafe fn bring_up(
    pool: &'static mut [PoolBlock; POOL_BLOCKS],
    board: &Board,
    kernel_pages: &[PhysAddr],
) -> Result<Kernel, Error> {
    let layout = layout()?;
    let tables = TablePool::new(pool, board.table_pool, board.table_pool_va)?;
    // SAFETY: the caller's promise.
    let mut sys = Split::new(unsafe { cpu() }, tables);
    // SAFETY: the caller's promise: nothing lives in the placement ranges yet.
    let banks = unsafe { plan_tcm(&mut sys, board) }?;
    // SAFETY: the caller's promise: the board describes this machine.
    let vm = unsafe { boot(&mut sys, board, &layout, &banks, kernel_pages) }?;
    Ok(Kernel { sys, vm, banks })
}

/// The board's uncached physical window over the frames and the TCM banks.
///
/// # Safety
/// Step 3 ([`boot`]) mapped that window, and nothing holds a Rust
/// reference into the frames or the TCM.
pub unsafe fn phys_windows(
    board: &Board,
    banks: &TcmLayout,
) -> Result<PhysWindows<PHYS_WINDOWS>, Error> {
    let mut w = PhysWindows::new();
    let ranges = banks.banks().map(|b| (b.base(), b.size()));
    for (pa, len) in [(board.frames.base(), board.frames.size())]
        .into_iter()
        .chain(ranges)
    {
        let at = (board.phys_window_va + pa.as_u32()) as *mut u8;
        // SAFETY: the window `boot` mapped, uncached; the caller's promise.
        unsafe { w.add(pa, len, at) }?;
    }
    Ok(w)
}

impl Kernel {
    /// Step 7 on the hardware: exchanges the page at `page` of the task
    /// `at` names with the frame at its resource slot (into DTCM, or back).
    ///
    /// # Safety
    /// As [`crate::exchange_page`], with `mem` the board's physical window.
    pub unsafe fn exchange_page<const R: usize>(
        &mut self,
        mem: &mut PhysWindows<PHYS_WINDOWS>,
        frames: &mut FrameTable<'_, R>,
        at: DtcmSlot,
        page: VirtAddr,
    ) -> Result<ExchangeStats, Error> {
        let Split { hw, tables } = &mut self.sys;
        // SAFETY: the caller's promises.
        unsafe { crate::exchange_page(&mut self.vm, tables, hw, mem, frames, at, page) }
    }
}
