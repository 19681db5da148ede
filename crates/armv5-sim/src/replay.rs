//! Replaying a differential case: raw table writes, an MMU state and a list
//! of accesses in, one outcome per access out. The demo kernel runs the same
//! case under QEMU; comparing the two lists checks the model against QEMU.

use crate::error::MemError;
use crate::machine::Machine;
use crate::memory::Width;
use crate::protection::Privilege;
use mmu_armv5::regs::{Dacr, Sctlr, Ttbr};
use mmu_armv5::{PhysAddr, VirtAddr};

/// The CP15 state a case runs under, as the raw words the demo kernel
/// writes and reports (the differential wire format).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayState {
    /// SCTLR (set M; S, R and A as the case needs).
    pub sctlr: u32,
    /// TTBR.
    pub ttbr: u32,
    /// DACR.
    pub dacr: u32,
    /// FCSEIDR (`pid << 25`).
    pub fcseidr: u32,
}

/// What one access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayOp {
    /// A data load.
    Load,
    /// A data store of this value.
    Store(u32),
    /// An instruction fetch (word).
    Fetch,
}

/// One access of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayAccess {
    /// The virtual address.
    pub va: VirtAddr,
    /// Load, store or fetch.
    pub op: ReplayOp,
    /// Access width (fetches are words).
    pub width: Width,
    /// Mode.
    pub privilege: Privilege,
}

/// What one access produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A load or fetch returned this value.
    Value(u32),
    /// A store completed.
    Stored,
    /// A data abort: DFSR and FAR (the MVA; QEMU reports the VA).
    DataAbort {
        /// DFSR.
        fsr: u32,
        /// FAR.
        far: u32,
    },
    /// A prefetch abort: IFSR.
    PrefetchAbort {
        /// IFSR.
        fsr: u32,
    },
}

/// Writes `table_writes` to physical memory, loads `state` (invalidating the
/// TLBs and caches first, as a kernel does before a case), then performs the
/// accesses in order.
pub fn replay(
    machine: &mut Machine,
    table_writes: &[(PhysAddr, u32)],
    state: &ReplayState,
    accesses: &[ReplayAccess],
) -> Result<Vec<Outcome>, MemError> {
    for &(pa, word) in table_writes {
        machine.phys_write(pa, Width::Word, word)?;
    }
    machine.clean_invalidate_dcache_all();
    machine.invalidate_icache_all();
    machine.invalidate_tlb();
    machine.set_ttbr(Ttbr::from_bits(state.ttbr));
    machine.set_dacr(Dacr::from_bits(state.dacr));
    machine.set_fcseidr(state.fcseidr);
    machine.set_sctlr(Sctlr::from_bits(state.sctlr));
    let out = accesses
        .iter()
        .map(|a| {
            let r = match a.op {
                ReplayOp::Load => machine.load(a.va, a.width, a.privilege).map(Outcome::Value),
                ReplayOp::Store(v) => machine
                    .store(a.va, a.width, v, a.privilege)
                    .map(|()| Outcome::Stored),
                ReplayOp::Fetch => machine.fetch(a.va, a.privilege).map(Outcome::Value),
            };
            r.unwrap_or_else(|_| match a.op {
                ReplayOp::Fetch => Outcome::PrefetchAbort {
                    fsr: machine.ifsr().bits(),
                },
                _ => Outcome::DataAbort {
                    fsr: machine.dfsr().bits(),
                    far: machine.far().bits(),
                },
            })
        })
        .collect();
    Ok(out)
}
