//! Page operations with the thesis's permission rules: create a user page
//! from a page resource, delete it back, change or query a page's state.
//!
//! Rules (D. Molka, "Support for on-chip memory in Fiasco", Großer Beleg,
//! TU Dresden, 2007, section 4.3):
//! * an address space changes only frames it owns, or page resources it has
//!   mapped (a resource becomes *its* user page);
//! * kernel pages, page-table and page-directory flags change only by the kernel;
//! * location and maximum rights never change (they are not even stored per frame);
//! * a resource is zeroed before it becomes a user page, so nothing leaks
//!   between owners;
//! * a frame taking part in an exchange can only be queried.
//!
//! Every operation names its page by a virtual address in the caller's
//! address space, as the thesis's system calls do; [`Mappings::translate`]
//! finds the frame, so a task can only name frames it has mapped.

use crate::frame::{FrameDesc, FrameError, FrameState, FrameTable};
use crate::mappings::{AddressSpace, Mappings};
use crate::phys::PhysMemory;
use crate::region::FRAME_SIZE;
use core::fmt;
use mmu_armv5::maint::CacheMaintenance;
use mmu_armv5::size::PageSizeKind;
use mmu_armv5::{ModifiedVirtAddr, PhysAddr, SpaceId, VirtAddr};

/// A page operation that was refused. Nothing was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OpError {
    /// The frame table refused: it does not describe the frame, or cannot
    /// record the requested owner ([`FrameError::SpaceIdOutOfRange`]).
    Frame(FrameError),
    /// The virtual address is not mapped in the caller's address space.
    NotMapped(VirtAddr),
    /// The virtual address is mapped by a 1 KiB tiny page: smaller than a
    /// frame, so the frame's state is not the caller's to change.
    TinyPage(VirtAddr),
    /// The frame is part of an exchange in progress.
    Busy(PhysAddr),
    /// The frame is not a page resource.
    NotResource {
        /// The frame.
        frame: PhysAddr,
        /// Its state.
        state: FrameState,
    },
    /// The frame is not a user page of the caller.
    NotOwner {
        /// The frame.
        frame: PhysAddr,
        /// Its state.
        state: FrameState,
    },
    /// Only the kernel may make this change (kernel pages, table flags).
    KernelOnly(PhysAddr),
    /// The transition is not allowed for anyone (undefined frames; kernel
    /// page straight to user page; one owner to another).
    Transition {
        /// The current state.
        from: FrameState,
        /// The requested state.
        to: FrameState,
    },
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OpError::Frame(e) => write!(f, "{e}"),
            OpError::NotMapped(va) => write!(f, "{va} is not mapped"),
            OpError::TinyPage(va) => write!(f, "{va} is mapped by a 1 KiB tiny page"),
            OpError::Busy(pa) => write!(f, "frame {pa} is being exchanged"),
            OpError::NotResource { frame, state } => {
                write!(f, "frame {frame} is {state:?}, not a page resource")
            }
            OpError::NotOwner { frame, state } => {
                write!(f, "frame {frame} ({state:?}) is not the caller's user page")
            }
            OpError::KernelOnly(pa) => write!(f, "only the kernel may change frame {pa}"),
            OpError::Transition { from, to } => {
                write!(f, "a frame cannot go from {from:?} to {to:?}")
            }
        }
    }
}

impl core::error::Error for OpError {}

impl From<FrameError> for OpError {
    fn from(e: FrameError) -> Self {
        OpError::Frame(e)
    }
}

/// What [`change_state`] should do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StateRequest {
    /// Only report the current state.
    Query,
    /// Move the frame to this state, if the rules allow it.
    Set(FrameState),
}

/// The rule table: may `actor` move a frame from `from` to `to`?
pub fn check_transition(
    actor: AddressSpace,
    frame: PhysAddr,
    from: FrameState,
    to: FrameState,
) -> Result<(), OpError> {
    use FrameState::{Kernel, Resource, Undefined, User};
    let refuse = Err(OpError::Transition { from, to });
    match actor {
        AddressSpace::Kernel => match (from, to) {
            (Undefined, _) | (_, Undefined) => refuse,
            (a, b) if a == b => Ok(()),
            (Resource, User(_) | Kernel(_)) => Ok(()),
            (User(_) | Kernel(_), Resource) => Ok(()),
            (Kernel(_), Kernel(_)) => Ok(()),
            // Kernel -> user and user -> user go through a (zeroed) resource.
            _ => refuse,
        },
        AddressSpace::User(me) => match (from, to) {
            (Kernel(_), _) | (_, Kernel(_)) => Err(OpError::KernelOnly(frame)),
            (Undefined, _) | (_, Undefined) => refuse,
            (User(o), _) if o != me => Err(OpError::NotOwner { frame, state: from }),
            (User(_), User(n)) if n == me => Ok(()),
            (User(_), Resource) => Ok(()),
            (Resource, User(n)) if n == me => Ok(()),
            (Resource, Resource) => Ok(()),
            _ => refuse,
        },
    }
}

/// The 4 KiB frame `va` lies in, in `space`.
fn frame_of<M: Mappings + ?Sized>(
    maps: &M,
    space: AddressSpace,
    va: VirtAddr,
) -> Result<PhysAddr, OpError> {
    let t = maps.translate(space, va).ok_or(OpError::NotMapped(va))?;
    if t.size == PageSizeKind::Tiny {
        return Err(OpError::TinyPage(va));
    }
    let off = va.as_u32() & (t.size.size() - 1) & !(FRAME_SIZE - 1);
    t.page
        .checked_add(off)
        .ok_or(OpError::Frame(FrameError::NotDescribed(t.page)))
}

/// Zeroes a frame that is becoming a user page: first discards every cached
/// line of it (at every virtual address it is mapped at, so no stale line
/// can later shadow or overwrite the zeroes), then writes zeroes to memory.
pub(crate) fn zero_frame<M, H>(maps: &M, hw: &mut H, frame: PhysAddr)
where
    M: Mappings + ?Sized,
    H: PhysMemory + CacheMaintenance + ?Sized,
{
    maps.for_each_mapping(frame, PageSizeKind::Small, &mut |m| {
        let mut a = 0;
        while a < FRAME_SIZE {
            let mva = ModifiedVirtAddr::new(m.mva.as_u32().wrapping_add(a));
            // SAFETY: the frame is a page resource whose content is being
            // destroyed; no one may rely on data in its cache lines (the
            // `unsafe` caller's promise on the frame table), and these are
            // exactly its mappings (its promise on `Mappings`).
            unsafe { hw.invalidate_dcache_line(mva) };
            a += H::DCACHE_LINE;
        }
    });
    hw.zero(frame, FRAME_SIZE);
}

/// The state of the frame `va` lies in, in `actor`'s space (anyone with a
/// mapping may ask). Reads only: safe.
pub fn query_state<const R: usize, M: Mappings + ?Sized>(
    table: &FrameTable<'_, R>,
    maps: &M,
    actor: AddressSpace,
    va: VirtAddr,
) -> Result<FrameState, OpError> {
    let frame = frame_of(maps, actor, va)?;
    Ok(table.desc(frame)?.state())
}

/// Changes (or, with [`StateRequest::Query`], reports) the state of the
/// frame `va` lies in, as `actor`, following [`check_transition`]. A
/// resource becoming a user page is zeroed first. Returns the state after
/// the call. [`query_state`] is the safe form of the query.
///
/// # Safety
/// A resource that becomes a user page is zeroed through `hw` (physical
/// memory) after its cache lines are discarded at every address `maps`
/// reports for it. The caller vouches that `table` is truthful (a page
/// resource holds nothing anyone needs and is not memory the program
/// reaches through Rust references), that `maps` reports every mapping of
/// the frame as the MMU walks it, and that `hw` is the CPU those mappings
/// are used on.
pub unsafe fn change_state<const R: usize, M, H>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    hw: &mut H,
    actor: AddressSpace,
    va: VirtAddr,
    request: StateRequest,
) -> Result<FrameState, OpError>
where
    M: Mappings + ?Sized,
    H: PhysMemory + CacheMaintenance + ?Sized,
{
    let frame = frame_of(maps, actor, va)?;
    let desc = table.desc(frame)?;
    let from = desc.state();
    let to = match request {
        StateRequest::Query => return Ok(from),
        StateRequest::Set(to) => to,
    };
    if desc.is_busy() {
        return Err(OpError::Busy(frame));
    }
    check_transition(actor, frame, from, to)?;
    set_checked(table, maps, hw, frame, desc, to)?;
    Ok(to)
}

fn set_checked<const R: usize, M, H>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    hw: &mut H,
    frame: PhysAddr,
    desc: FrameDesc,
    to: FrameState,
) -> Result<(), OpError>
where
    M: Mappings + ?Sized,
    H: PhysMemory + CacheMaintenance + ?Sized,
{
    // Checked before the frame is zeroed: an owner the frame table cannot
    // record leaves the frame untouched.
    let new = desc.with_state(to)?;
    if desc.state() == FrameState::Resource && matches!(to, FrameState::User(_)) {
        zero_frame(maps, hw, frame);
    }
    table.set(frame, new)?;
    Ok(())
}

/// Turns the page resource `va` is mapped to in `caller`'s space into a
/// zeroed user page owned by `caller`. Returns the frame.
///
/// # Safety
/// As [`change_state`]: the frame is zeroed and its cache lines discarded.
pub unsafe fn create_user_page<const R: usize, M, H>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    hw: &mut H,
    caller: SpaceId,
    va: VirtAddr,
) -> Result<PhysAddr, OpError>
where
    M: Mappings + ?Sized,
    H: PhysMemory + CacheMaintenance + ?Sized,
{
    let frame = frame_of(maps, AddressSpace::User(caller), va)?;
    let desc = table.desc(frame)?;
    if desc.is_busy() {
        return Err(OpError::Busy(frame));
    }
    if !desc.is_resource() {
        return Err(OpError::NotResource {
            frame,
            state: desc.state(),
        });
    }
    set_checked(table, maps, hw, frame, desc, FrameState::User(caller))?;
    Ok(frame)
}

/// Turns the caller's user page at `va` back into a page resource. Only the
/// owner may do this. Returns the frame.
pub fn delete_user_page<const R: usize, M: Mappings + ?Sized>(
    table: &mut FrameTable<'_, R>,
    maps: &M,
    caller: SpaceId,
    va: VirtAddr,
) -> Result<PhysAddr, OpError> {
    let frame = frame_of(maps, AddressSpace::User(caller), va)?;
    let desc = table.desc(frame)?;
    if desc.is_busy() {
        return Err(OpError::Busy(frame));
    }
    match desc.state() {
        FrameState::User(o) if o == caller => {
            table.set(frame, desc.with_state_of(FrameDesc::RESOURCE))?;
            Ok(frame)
        }
        state => Err(OpError::NotOwner { frame, state }),
    }
}
