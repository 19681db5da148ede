//! Step 7: moving a kernel page into DTCM with `spm`'s exchange.

use core::cell::RefCell;

use mmu_armv5::maint::TrustedMaintenance;
use mmu_armv5::regs::Cp15;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::table::{PageTable, TableAlloc};
use mmu_armv5::{FcsePid, VirtAddr};
use spm::exchange::DEFAULT_CHUNK;
use spm::{AddressSpace, CpsrIrq, Exchange, ExchangeRequest, ExchangeStats, FrameTable, Hw};
use spm::{PhysMemory, Progress, Rights, SharedCpu, TableMappings};

use crate::{Error, Vm};

/// Moves the kernel's 4 KiB page at `page` into the DTCM frame the kernel
/// maps at `dtcm` (in its TCM window): afterwards `page` is backed by the
/// DTCM frame, with the same content and permissions, and `dtcm` by the
/// old RAM frame. The frame table must describe the old frame as a
/// movable kernel page and the DTCM frame as a page resource (step 2).
///
/// The exchange runs in bounded steps (256 bytes copied or flushed each)
/// with interrupts masked only inside a step; this function runs them back
/// to back, where a kernel may do other work (or reschedule) between two.
/// While the page is write-protected a kernel write to it faults: a kernel
/// that writes the page from elsewhere asks `Exchange::protects` in its
/// abort handler and waits for (or finishes) the page.
///
/// `tables` and `cpu` are the two halves of the platform (with
/// `fass::Split`, its `tables` and `hw` fields), `mem` the physical memory
/// behind the board's physical window.
///
/// # Safety
/// `frames` describes memory truthfully (a DTCM page resource holds nothing
/// anyone needs; no frame of the exchange is memory the program reaches
/// through Rust references), `vm`'s CPD is the table the CPU walks and no
/// process maps either frame, `cpu` is this CPU and `mem` reaches its
/// physical memory, and no interrupt handler changes mappings
/// (`spm::Exchange::step`).
pub unsafe fn move_to_dtcm<A, H, P, const R: usize>(
    vm: &Vm,
    tables: &mut A,
    cpu: &mut H,
    mem: &mut P,
    frames: &mut FrameTable<'_, R>,
    page: VirtAddr,
    dtcm: VirtAddr,
) -> Result<ExchangeStats, Error>
where
    A: TableAlloc + ?Sized,
    H: Cp15 + TrustedMaintenance,
    P: PhysMemory + ?Sized,
{
    // One CPU for the mappings (they clean the table lines they write) and
    // the hardware side: a `RefCell` around the borrowed CPU (`&mut H` is a
    // `Cp15` and a `CacheMaintenance` too), borrowed within each call.
    let cpu = RefCell::new(cpu);
    let kernel = vm.cpd().kernel();
    // SAFETY: the only `PageTable` on the kernel's root while it lives
    // (`fass` writes the CPD's user slots directly and frees no table).
    let mut cpd = unsafe { PageTable::from_root(kernel.root(), kernel.encoding()) }?;
    let mut maps = TableMappings::<_, _, 1>::new(tables, SharedCpu(&cpu));
    maps.add(AddressSpace::Kernel, FcsePid::ZERO, &mut cpd)?;
    let mut hw = Hw::new(SharedCpu(&cpu), mem);
    // SAFETY: only the exchange's steps use it, and each pairs every
    // `disable` with its `restore` and opens no other masked section.
    let mut irq = unsafe { CpsrIrq::new() };
    let request = ExchangeRequest {
        caller: AddressSpace::Kernel,
        target_space: AddressSpace::Kernel,
        target: page,
        resource_space: AddressSpace::Kernel,
        resource: dtcm,
        size: PageSizeKind::Small,
        count: 1,
        rights: Rights::RW,
    };
    let mut exchange = Exchange::begin(frames, &maps, request, DEFAULT_CHUNK)?;
    loop {
        // SAFETY: the caller's promises (see `# Safety`); `maps` holds the
        // CPD, the one table the CPU walks, so it reports every mapping.
        let progress = unsafe { exchange.step(frames, &mut maps, &mut hw, &mut irq) }?;
        if progress == Progress::Done {
            return Ok(exchange.stats());
        }
        // Interrupts are enabled here: a kernel may run other work.
    }
}
