//! A coherence checker for a guest running under QEMU: replays the guest's
//! real instruction fetches, loads, stores and CP15 operations through a
//! *version model* of the CPU's virtually indexed, virtually tagged caches
//! and of its TLB, and reports every access for which the real CPU would
//! have returned (or written) something else than QEMU did.
//!
//! QEMU models no caches and gives a plugin no data values, but QEMU itself
//! is coherent: what a load returns there is the newest store to that
//! physical word. So each store makes a new *version* of the words it
//! writes; the checker keeps, per physical word, the newest version and the
//! version RAM holds, and per cache line the versions the line holds. A read
//! that would get anything but the newest version on the modelled CPU is a
//! violation ([`ViolationKind`]):
//!
//! | kind | when |
//! |---|---|
//! | `StaleAlias` | a tag hit (load, store or fetch) on a line filled from another physical line: a homonym, on hardware another space's data |
//! | `StaleLine` | a D-side hit on the right line holding an older version (a write through another alias or an uncached window not followed by invalidating this line) |
//! | `StaleRam` | a D-side miss or uncached read while RAM does not hold the newest version (dirty under another alias: a missing clean; or lost when an older line was written back over it) |
//! | `StaleFetch` | a fetch that gets an older version, from a stale I-line or from RAM (code written through the D-cache without clean, or an I-line not invalidated) |
//! | `StaleTlb` | a model-TLB hit whose physical page differs from QEMU's, or a translation fault (DFSR 0x5/0x7 then FAR read) on a page the model TLB still holds |
//! | `StaleWalk` | a model-TLB miss whose first-level descriptor (at `(TTBR & !0x3FFF) + (MVA >> 20) * 4`) is not clean in RAM |
//! | `IncompleteClean` | an [`Event::AssertClean`](mmu_armv5::marker::Event::AssertClean) while a D-line is dirty |
//!
//! After reporting, the model puts the offending line or entry back in
//! QEMU's state (a homonym line is cleaned and refilled, a stale word takes
//! the newest version, a stale TLB entry is refilled), so one missing
//! operation is reported where it is first observed, not at every later
//! access. Uncached reads are not corrected: each one that gets stale RAM is
//! reported. Counts ([`Counts`]) are never capped; the list
//! ([`Checker::violations`]) keeps the first [`MAX_VIOLATIONS`].
//!
//! # Input
//!
//! The `cache-check` plugin calls [`Checker::access`] for every fetch, load
//! and store (the virtual address as the guest used it, before FCSE
//! relocation, and QEMU's physical address), and [`Checker::marker`] for
//! every decoded [`mmu_armv5::marker`] marker, in program order. Marker
//! window accesses never reach `access`.
//!
//! ```
//! use armv5_sim::coherence::{Access, AccessKind, Checker, Cpu, ViolationKind};
//! use mmu_armv5::marker::Key;
//!
//! let cp15 = |crn, crm, opc2| Key::Cp15 { read: false, crn, crm, opc2 };
//! let mut c = Checker::new(Cpu::Arm926);
//! c.marker(cp15(2, 0, 0), 0x4000, 0); // TTBR
//! c.marker(cp15(1, 0, 0), 0x1005, 0); // SCTLR: M, C, I
//! let load = |va, pa| Access { pc: 0xC000_8000, va, pa, size: 4,
//!                              kind: AccessKind::Load, io: false, privileged: true };
//! let store = |va, pa| Access { kind: AccessKind::Store, ..load(va, pa) };
//! // The kernel zeroes a frame through its linear map (read-allocate, then
//! // the stores hit the line and leave it dirty) ...
//! c.access(&load(0xC010_0000, 0x0010_0000));
//! c.access(&store(0xC010_0000, 0x0010_0000));
//! // ... and the new owner reads it through its own alias, from RAM.
//! c.access(&Access { privileged: false, ..load(0x0001_0000, 0x0010_0000) });
//! assert_eq!(c.counts().of(ViolationKind::StaleRam), 1);
//! ```
//!
//! # What is modelled
//!
//! Geometry and replacement come from [`crate::presets`]:
//! * **ARM926EJ-S** (`versatilepb`): 16 KiB I + 16 KiB D, 4-way, 32-byte
//!   lines, pseudo-random replacement (seeded), 64-entry unified TLB.
//!   \[ARM926 TRM, DDI 0198D §4.1\]: caches 4–128 KiB, four-way, eight-word
//!   lines, "two dirty bits in the DCache", allocate on read miss, the PA
//!   kept in the tag RAM for write-backs. QEMU 7.2's `arm926` claims cache
//!   type 0x01DD20D2, the value of its ARM1136 models: in the ARMv5 format
//!   a 4 KiB I- and a 64 KiB D-cache, 4-way, 32-byte lines, cache type 0
//!   (write-through). That is no ARM926EJ-S product's configuration (and
//!   the D-cache is write-back on every part), so the sizes are the
//!   preset's, not QEMU's.
//! * **SA-1110** (`collie`): 16 KiB I and 8 KiB D, 32-way, 32-byte lines,
//!   round-robin, write-back, 32-entry I- and D-TLBs (\[W05\] in
//!   [`crate::presets`]). The 512-byte mini data cache (pages with C=1,
//!   B=0) is **not** modelled: every cacheable access goes to the main
//!   D-cache.
//! * **PXA255** (`connex`): 32 KiB I and D, 32-way, 32-byte lines,
//!   round-robin with a pointer per set that advances on every fill
//!   \[XScale Core Developer's Manual §6.2.4\], two dirty bits per line (one
//!   per 16 bytes) \[PXA255 User's Manual §6.1.1\], 32-entry I- and D-TLBs.
//!   The 2 KiB mini data cache and write-allocate pages (X bit) are **not**
//!   modelled.
//!
//! Common to the three: lines are tagged by MVA and keep the physical line
//! they were filled from; two dirty bits per line (half-line write-back,
//! as the ARM926EJ-S and XScale manuals state; taken to hold for the
//! SA-1110 as well); read-allocate, write-back, no write allocate: a store
//! that misses goes to RAM. The D-cache caches only with SCTLR.M and .C set
//! (all three treat data as non-cacheable with the MMU off); the I-cache
//! caches whenever SCTLR.I is set. Accesses QEMU marks as I/O, and accesses
//! to VA ranges the guest declared with `UncachedBegin`/`UncachedEnd`, go
//! to RAM. Everything else in RAM is taken as cacheable write-back: page
//! attributes are not visible to the plugin.
//!
//! CP15 operations applied (from markers): SCTLR (c1), TTBR (c2), DACR (c3,
//! kept only for reports), FCSEIDR (c13: MVA = VA + PID for VA < 32 MiB),
//! DFSR/IFSR and FAR reads (c5, c6), cache operations c7 (whole I, whole D,
//! whole I+D invalidate; I line by MVA and set/way; D line clean, invalidate
//! and clean+invalidate by MVA and by set/way; drain; the ARM926
//! test-and-clean loops `MRC c7,c10,3` / `c7,c14,3` reported as one marker
//! meaning "clean (and invalidate) the whole D-cache"; XScale line allocate
//! c7,c2,5: no effect if the line is resident, else the victim is written
//! back and the new line holds undefined data and is *not* dirty \[XScale
//! Core Developer's Manual, chapter 7, register 7 "line-allocate"\]; its physical address
//! is the model TLB's, or the first access's), and TLB operations c8 (whole
//! and by MVA, I, D or both; on the ARM926's unified TLB every form acts
//! on the one TLB). By-MVA operands are taken as MVAs, as the hardware does.
//!
//! # The TLB model
//!
//! Page sizes are not visible, so an entry is one 1 MiB MVA region with one
//! VA->PA offset and a bitmap of the 1 KiB blocks (tiny-page granularity)
//! accessed through it: the blocks of a section, of a large page or of a
//! linear run of pages share one entry, as a section does on hardware;
//! pages with their own offsets take one entry each. Replacement is
//! round-robin over the preset's entry count. An entry is dropped only by a
//! TLB operation or an eviction. Invalidate by MVA drops the entries that
//! hold a block of the 4 KiB page named, or, when none does, every entry of
//! that MiB (one of them may be the section or large page covering it):
//! it errs on dropping too much, which can hide a missing invalidation but
//! never reports one that was done. The walk
//! check reads the first-level descriptor only: the second-level
//! descriptor's address is in the first-level descriptor's *value*, which
//! the plugin cannot see. Domains and access permissions in TLB entries are
//! not modelled (QEMU flushes its own TLB on every DACR write, so a stale
//! domain cannot show in QEMU either). Prefetch-abort translation faults
//! are not checked (ARMv5 has no IFAR to read the address from).
//!
//! # Not modelled
//!
//! Write-buffer contents (a drain only costs cycles; stores are in RAM at
//! once), write-through pages, cache lockdown, TCM (declare it uncached),
//! the ARM926 I-line prefetch (c7,c13,1, ignored), byte granularity (a
//! version covers a 32-bit word: a byte store makes a new version of its
//! word), DMA. Values: the plugin sees none, so a store makes a new version
//! even when it writes the value the word already holds; a rewrite left
//! dirty (a table restored to what it was, without a clean) is reported
//! like a change. Such a report names code that would be wrong the day it
//! writes a different value.
//!
//! # Memory
//!
//! Versions live in a sparse map over the whole 32-bit physical space (a
//! 4 MiB page directory, then 8 KiB per 4 KiB page written): no RAM base or
//! size is needed, and a guest that writes 64 MiB costs 128 MiB of host
//! memory.
//!
//! # Cycles
//!
//! [`Checker::cycles`] is a running total of modelled cycles with the
//! preset's [`CostModel`](crate::CostModel): per access `access` (so an
//! instruction costs at least its fetch), plus `tlb_miss` per model-TLB
//! miss, `line_fill` per line fill, `write_back` per line written back,
//! `uncached_read`/`uncached_write` per uncached access or store miss,
//! `line_op`, `whole_cache_op`, `tlb_invalidate`, `drain`, `cp15_write` per
//! operation, and `fault` per FSR read. A whole-cache clean costs what it
//! does to the modelled lines: one `line_op` per dirty line (plus the last
//! test) and one `write_back` per line written back, never a preset
//! estimate.

mod checker;
mod types;
mod vcache;
mod versions;
mod vtlb;

pub use checker::{Checker, Stats};
pub use types::{Access, AccessKind, Counts, Cpu, Violation, ViolationKind};

/// How many violations [`Checker::violations`] keeps (the counts go on).
pub const MAX_VIOLATIONS: usize = 1000;
