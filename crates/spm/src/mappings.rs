//! The reverse-mapping interface the kernel (or `fass`) implements.
//!
//! `spm` owns no page tables. It asks a [`Mappings`] implementation where a
//! virtual address leads, which virtual addresses lead to a physical page,
//! and to change those mappings. Every method works on whole pages of one
//! size (`mmu_armv5`'s [`PageSizeKind`]) at a page-aligned physical address.
//!
//! # Tiny pages
//! 1 KiB tiny pages can be reported by [`Mappings::translate`] but are
//! refused by every operation ([`crate::OpError::TinyPage`],
//! [`crate::ExchangeError::TinyPage`]): the frame table describes 4 KiB
//! frames, and the four tiny pages of one frame can belong to different
//! mappings with different rights, so neither ownership nor an exchange of
//! "the frame" is well defined for them. (For a tiny page
//! [`PageSizeKind::small_pages`] is 0: it covers no whole frame.)

use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, SpaceId, VirtAddr};

/// An address space: the kernel's (shared by every task) or a task's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AddressSpace {
    /// The kernel.
    Kernel,
    /// A task.
    User(SpaceId),
}

/// Where a virtual address leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Translation {
    /// Physical address of the start of the page that maps the address.
    pub page: PhysAddr,
    /// Size of that mapping.
    pub size: PageSizeKind,
    /// Whether the mapping currently allows writes.
    pub writable: bool,
}

/// One virtual mapping of a physical page, as the reverse map reports it
/// ([`Mappings::for_each_mapping`]): which address space reaches the page
/// at which MVA, and the two facts an exchange needs. The forward view, what
/// a table maps at an MVA, is `mmu_armv5::table::Mapping`: a kernel
/// implementing [`Mappings`] over those tables uses both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ReverseMapping {
    /// The address space the mapping is in.
    pub space: AddressSpace,
    /// The modified virtual address of the page's first byte: what the
    /// caches and TLB are tagged with.
    pub mva: ModifiedVirtAddr,
    /// Whether the mapping allows writes.
    pub writable: bool,
    /// Whether the mapping is cacheable (descriptor C bit set). The D- and
    /// I-caches hold lines only of cacheable mappings (a mapping keeps its
    /// cache attributes when [`Mappings::swap`] retargets it), so `spm`
    /// does line maintenance only at the addresses of cacheable mappings;
    /// report `true` when unsure.
    pub cached: bool,
}

/// Reverse mappings and page-table changes, provided by the kernel.
///
/// # Contract
/// * Every method acts on *every* mapping of the page, in every address
///   space (including the kernel's own aliases): this is what lets an
///   exchange move a page shared between tasks.
/// * The implementation changes page-table entries and cleans the table
///   lines the hardware walker reads; `spm` invalidates the TLB entries and
///   cache lines of the mappings it is told about, so an implementation
///   need not.
/// * An exchange asks for the mappings of its two pages once per page and
///   keeps them between steps while [`Mappings::generation`] returns the
///   same `Some` value; an implementation that returns `None` (the default)
///   is asked again for every step.
/// * [`Mappings::write_protect`] is called for both pages of an exchange
///   (the old page and the resource) when any of their mappings is
///   writable; it remembers which mappings were writable;
///   [`Mappings::swap`] carries that memory with the mappings, and
///   [`Mappings::restore_write`] gives write access back to exactly those.
pub trait Mappings {
    /// The page `va` lies in, in `space`, or `None` if unmapped.
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation>;

    /// A value that changes whenever a mapping may have been added or
    /// removed, or a mapping's MVA may have changed (e.g. a new FCSE PID),
    /// anywhere; `None` if the implementation does not track this. Changes
    /// made by `spm` itself through [`Mappings::write_protect`],
    /// [`Mappings::restore_write`] and [`Mappings::swap`] need not change it
    /// (an exchange accounts for them).
    ///
    /// The value must not come back to one an exchange may still hold: an
    /// exchange that sees the value it checked its mappings under trusts
    /// them. The crate's adapters count changes in a `u64` that only goes
    /// up, so a value repeats only after 2^64 changes (584 years at one
    /// change per nanosecond); an implementation that cannot promise as
    /// much returns `None`.
    fn generation(&self) -> Option<u64> {
        None
    }

    /// Calls `f` once for every mapping of the `size` page at `page`.
    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    );

    /// Stores the mappings of the `size` page at `page` in `out`, as many
    /// as fit, in the order [`Mappings::for_each_mapping`] reports them,
    /// and returns how many the page has (more than `out.len()` when they
    /// did not all fit). The default goes through `for_each_mapping`; an
    /// implementation may answer directly (an exchange asks once per page).
    fn collect_mappings(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        out: &mut [ReverseMapping],
    ) -> usize {
        let mut n = 0;
        self.for_each_mapping(page, size, &mut |m| {
            if let Some(o) = out.get_mut(n) {
                *o = *m;
            }
            n += 1;
        });
        n
    }

    /// Removes write access from every mapping of the page, remembering which had it.
    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind);

    /// Gives write access back to the mappings of the page that
    /// [`Mappings::write_protect`] took it from.
    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind);

    /// Exchanges the targets: every mapping of `a` now maps `b` and every
    /// mapping of `b` now maps `a`, each keeping its permissions.
    ///
    /// `spm` calls this with interrupts masked (through its
    /// [`crate::InterruptControl`]), always, also when no mapping of either
    /// page is writable, and invalidates the TLB entries before unmasking: so
    /// the implementation need not make the many descriptor writes atomic
    /// itself, and no interrupt handler ever sees the mappings half swapped.
    /// It must not unmask interrupts itself.
    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind);

    /// Called right after the masked window of every [`Mappings::swap`]
    /// (interrupts back in the state the step found them in): the place
    /// for bookkeeping that follows the swap but that the MMU never reads
    /// and no interrupt handler uses, such as the kernel's own records of
    /// which frame a mapping maps, so it stays out of the masked window.
    /// Until it returns, the records may still describe the mappings as
    /// before the swap; [`Mappings::for_each_mapping`] of either page must
    /// then still report, between them, every mapping of the two pages
    /// (the exchange invalidates the TLB entries of both pages' mappings
    /// inside the window). The default does nothing (all bookkeeping done
    /// in `swap`).
    fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        let _ = (a, b, size);
    }

    /// A 4 KiB frame holding second-level tables moved from `old` to `new`:
    /// point every first-level entry that referenced a table inside `old`
    /// at the same offset inside `new`.
    fn move_second_level(&mut self, old: PhysAddr, new: PhysAddr);

    /// A 16 KiB first-level table moved from `old` to `new`: update every
    /// record of its address (the task's page-directory pointer). The
    /// translation table base register is updated by `spm`.
    fn move_first_level(&mut self, old: PhysAddr, new: PhysAddr);
}

/// Mappings lent by exclusive reference: every method, including the
/// provided ones, goes to the borrowed value.
impl<T: Mappings + ?Sized> Mappings for &mut T {
    fn translate(&self, space: AddressSpace, va: VirtAddr) -> Option<Translation> {
        (**self).translate(space, va)
    }
    fn generation(&self) -> Option<u64> {
        (**self).generation()
    }
    fn for_each_mapping(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        f: &mut dyn FnMut(&ReverseMapping),
    ) {
        (**self).for_each_mapping(page, size, f);
    }
    fn collect_mappings(
        &self,
        page: PhysAddr,
        size: PageSizeKind,
        out: &mut [ReverseMapping],
    ) -> usize {
        (**self).collect_mappings(page, size, out)
    }
    fn write_protect(&mut self, page: PhysAddr, size: PageSizeKind) {
        (**self).write_protect(page, size);
    }
    fn restore_write(&mut self, page: PhysAddr, size: PageSizeKind) {
        (**self).restore_write(page, size);
    }
    fn swap(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        (**self).swap(a, b, size);
    }
    fn swapped(&mut self, a: PhysAddr, b: PhysAddr, size: PageSizeKind) {
        (**self).swapped(a, b, size);
    }
    fn move_second_level(&mut self, old: PhysAddr, new: PhysAddr) {
        (**self).move_second_level(old, new);
    }
    fn move_first_level(&mut self, old: PhysAddr, new: PhysAddr) {
        (**self).move_first_level(old, new);
    }
}
