//! The spm frame table and page exchange on the `armv5-sim` model: three
//! address spaces with user pages in RAM and their own TCM resources; user
//! loads and stores, exchanges begun, stepped (any chunk size) and
//! cancelled, pages unmapped and frame states changed between steps, in any
//! order. Checked after every operation:
//! - no lost write: a load returns the last value stored at that virtual
//!   address, wherever an exchange moved the page (zero after a resource
//!   became a user page: `change_state` zeroes it);
//! - a store faults only when the page is unmapped or an exchange in
//!   progress protects its frame;
//! - `change_state` answers as the documented rule table
//!   (`ops::check_transition`) and the busy flag say;
//! - the per-MiB section summaries agree with a recount of the frames;
//! - once no exchange is in progress, no frame is busy;
//! - `init_range` of a frame under an exchange is refused with `Busy` and
//!   changes nothing (it would clear the busy flag and let a second
//!   exchange begin on the frame); of any other frame it succeeds;
//! - a frame table rebuilt over storage holding the table's descriptions
//!   (as a kernel dropping and rebuilding it would) is refused with
//!   `StorageBusy` at the first busy frame while an exchange is in
//!   progress, and built otherwise.
//!
//! The harness is `crates/spm/tests/common` (the crate's model tests use
//! it too); this file decodes the input and keeps the reference.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/spm/tests/common/mod.rs"]
mod common;

use common::ext::{pa, req, us, va, KernelExt};
use common::{Kernel, Storage, DTCM, ITCM};
use mmu_armv5::size::{Frame, PageSizeKind};
use spm::ops::{self, StateRequest};
use spm::{Exchange, FrameDesc, FrameError, FrameState, FrameTable, Mappings, Progress};
use spm::{Rights, SectionSummary, SpaceId};

const SPACES: u16 = 3;
const PAGES: u32 = 3;
const RESOURCES: u32 = 2;
const RES_VA: u32 = 0x0004_0000;

fn page_va(p: u32) -> u32 {
    0x8000 + p * 0x1000
}

fn page_frame(s: u16, p: u32) -> u32 {
    0x0010_0000 + ((u32::from(s) - 1) * PAGES + p) * 0x1000
}

/// Space `s`'s `j`-th TCM resource: ITCM for spaces 1 and 2, DTCM for 3.
fn res_frame(s: u16, j: u32) -> u32 {
    let i = (u32::from(s) - 1) * RESOURCES + j;
    if i < 4 {
        ITCM + i * 0x1000
    } else {
        DTCM + (i - 4) * 0x1000
    }
}

fn res_va(j: u32) -> u32 {
    RES_VA + j * 0x1000
}

struct Active {
    x: Exchange,
    space: u16,
    page: u32,
    target_frame: u32,
    resource_frame: u32,
}

struct Fuzz<'a> {
    k: Kernel<'a>,
    /// The reference content of each user page, by (space, page).
    content: Vec<Vec<u8>>,
    mapped: Vec<bool>,
    active: Vec<Active>,
}

fn idx(s: u16, p: u32) -> usize {
    usize::from(s - 1) * PAGES as usize + p as usize
}

impl Fuzz<'_> {
    fn frame_of(&self, s: u16, v: u32) -> Option<u32> {
        self.k.maps.translate(us(s), va(v)).map(|t| t.page.as_u32())
    }

    fn protected(&self, frame: u32) -> bool {
        self.active.iter().any(|a| a.x.protects(pa(frame)))
    }

    fn store(&mut self, s: u16, p: u32, off: u32, v: u8) {
        let r = self.k.store(us(s), page_va(p) + off, v);
        let i = idx(s, p);
        match r {
            Ok(()) => {
                assert!(self.mapped[i], "store to an unmapped page succeeded");
                self.content[i][off as usize] = v;
            }
            Err(f) => {
                if self.mapped[i] {
                    let frame = self.frame_of(s, page_va(p)).expect("mapped");
                    assert!(
                        self.protected(frame),
                        "store to {s}:{:#x} faulted ({f:?}) outside an exchange",
                        page_va(p) + off
                    );
                }
            }
        }
    }

    fn load(&mut self, s: u16, p: u32, off: u32) {
        let i = idx(s, p);
        let r = self.k.load(us(s), page_va(p) + off);
        if self.mapped[i] {
            assert_eq!(
                r,
                Ok(self.content[i][off as usize]),
                "load {s}:{:#x}",
                page_va(p) + off
            );
        } else {
            assert!(r.is_err(), "load from an unmapped page succeeded");
        }
    }

    fn begin(&mut self, s: u16, p: u32, j: u32, chunk: u32) {
        if self.active.len() >= 2 {
            return;
        }
        let Some(target_frame) = self.frame_of(s, page_va(p)) else {
            return;
        };
        let Some(resource_frame) = self.frame_of(s, res_va(j)) else {
            return;
        };
        if let Ok(x) = self
            .k
            .begin(req(us(s), page_va(p), res_va(j), 1, Rights::RW), chunk)
        {
            self.active.push(Active {
                x,
                space: s,
                page: p,
                target_frame,
                resource_frame,
            });
        }
    }

    fn step(&mut self, n: usize) {
        if self.active.is_empty() {
            return;
        }
        let n = n % self.active.len();
        let r = {
            let mut a = self.active.swap_remove(n);
            let r = self.k.step(&mut a.x);
            if r == Ok(Progress::Pending) {
                self.active.push(a);
                return;
            }
            (a, r)
        };
        let (a, r) = r;
        if r == Ok(Progress::Done) {
            // The page now lives in the resource frame, at the same address;
            // the resource address holds the old frame.
            let i = idx(a.space, a.page);
            assert!(self.mapped[i], "an exchange of an unmapped page ended Done");
            assert_eq!(
                self.frame_of(a.space, page_va(a.page)),
                Some(a.resource_frame)
            );
            assert_eq!(
                self.k.state(a.resource_frame),
                FrameState::User(sid(a.space))
            );
            for off in [0u32, 1, 31, 32, 2047, 4095] {
                self.load(a.space, a.page, off);
            }
        }
        self.released(&a);
    }

    fn cancel(&mut self, n: usize) {
        if self.active.is_empty() {
            return;
        }
        let mut a = self.active.swap_remove(n % self.active.len());
        let _ = self.k.cancel(&mut a.x);
        self.released(&a);
    }

    /// An ended exchange leaves its frames idle (unless another exchange
    /// in progress holds them).
    fn released(&self, a: &Active) {
        for f in [a.target_frame, a.resource_frame] {
            if !self.protected(f) && !self.active.iter().any(|b| b.busy_with(f)) {
                assert!(
                    !self.k.table.desc(pa(f)).unwrap().is_busy(),
                    "frame {f:#x} left busy"
                );
            }
        }
    }

    fn unmap(&mut self, s: u16, p: u32) {
        let i = idx(s, p);
        if self.mapped[i] {
            self.k.maps.unmap(us(s), page_va(p), PageSizeKind::Small);
            self.mapped[i] = false;
        }
    }

    fn change_state(&mut self, s: u16, p: u32, to: FrameState) {
        let i = idx(s, p);
        let Some(frame) = self.frame_of(s, page_va(p)) else {
            return;
        };
        let before = self.k.table.desc(pa(frame)).unwrap();
        // SAFETY: the model's frame table, mappings and machine are one
        // consistent simulated system; nothing here is this program's memory.
        let r = unsafe {
            ops::change_state(
                &mut self.k.table,
                &self.k.maps,
                &mut self.k.hw,
                us(s),
                va(page_va(p)),
                StateRequest::Set(to),
            )
        };
        let rule = ops::check_transition(us(s), pa(frame), before.state(), to);
        match r {
            Ok(got) => {
                assert!(!before.is_busy(), "a busy frame changed state");
                assert!(rule.is_ok(), "{:?} -> {to:?} allowed", before.state());
                assert_eq!(got, to);
                assert_eq!(self.k.state(frame), to);
                if before.state() == FrameState::Resource && matches!(to, FrameState::User(_)) {
                    self.content[i].iter_mut().for_each(|b| *b = 0);
                }
            }
            Err(e) => {
                assert!(
                    before.is_busy() || rule.is_err(),
                    "{:?} -> {to:?} refused: {e:?}",
                    before.state()
                );
                assert_eq!(self.k.table.desc(pa(frame)).unwrap(), before);
            }
        }
    }

    /// The section summaries in use (RAM's second MiB, the ITCM, the
    /// DTCM: one summary per 1 MiB slot of each region) agree with a
    /// recount of the frames.
    fn check_summaries(&self) {
        for (base, len) in [
            (0x0010_0000u32, 0x10_0000u32),
            (ITCM, 32 << 10),
            (DTCM, 64 << 10),
        ] {
            let s = self.k.table.section(pa(base)).unwrap();
            let (mut resources, mut pinned) = (0, 0);
            for f in (base..base + len).step_by(0x1000) {
                let d = self.k.table.desc(pa(f)).unwrap();
                resources += u32::from(d.is_resource());
                pinned += u32::from(!d.is_movable());
            }
            assert_eq!(
                (s.described(), s.resources(), s.pinned()),
                (len / 0x1000, resources, pinned),
                "summary of {base:#x}"
            );
        }
    }
}

impl Active {
    fn busy_with(&self, f: u32) -> bool {
        self.target_frame == f || self.resource_frame == f
    }
}

impl Fuzz<'_> {
    /// `init_range` of `frame` with the state and movability it has: a
    /// no-op unless the frame is busy, when it must be refused.
    fn reinit(&mut self, frame: u32) {
        let before = self.k.table.desc(pa(frame)).unwrap();
        let got = self.k.table.init_range(
            Frame::from_start(pa(frame)).unwrap(),
            before.state(),
            before.is_movable(),
        );
        if before.is_busy() {
            assert_eq!(got, Err(FrameError::Busy(pa(frame))));
        } else {
            assert_eq!(got, Ok(()));
        }
        assert_eq!(self.k.table.desc(pa(frame)).unwrap(), before);
    }

    /// `FrameTable::new` over a copy of the table's storage (every
    /// described frame's description, region by region, as the table lays
    /// them out): refused at the first busy frame, built when none is.
    fn rebuild(&self) {
        let regions = common::regions();
        let mut frames: Vec<FrameDesc> = Vec::new();
        for r in &regions {
            for i in 0..r.frames() {
                let at = pa(r.base().as_u32() + i * 0x1000);
                frames.push(self.k.table.desc(at).unwrap());
            }
        }
        let first_busy = frames.iter().position(|d| d.is_busy());
        let mut sections =
            vec![SectionSummary::default(); FrameTable::<4>::sections_needed(&regions)];
        let got = FrameTable::<4>::new(&regions, &mut frames, &mut sections).map(|_| ());
        match first_busy {
            Some(i) => assert_eq!(got, Err(FrameError::StorageBusy(i))),
            None => assert_eq!(got, Ok(())),
        }
        assert_eq!(first_busy.is_some(), self.k.table.busy_frames() > 0);
    }
}

fn sid(s: u16) -> SpaceId {
    SpaceId(s)
}

fn space(u: &mut Unstructured<'_>) -> Result<u16> {
    u.int_in_range(1..=SPACES)
}

fn step(f: &mut Fuzz<'_>, u: &mut Unstructured<'_>) -> Result<()> {
    let s = space(u)?;
    let p = u.int_in_range(0..=PAGES - 1)?;
    match u.int_in_range(0..=15u8)? {
        0..=3 => {
            let off = u.int_in_range(0..=4095)?;
            let v = u.arbitrary()?;
            f.store(s, p, off, v);
        }
        4..=5 => {
            let off = u.int_in_range(0..=4095)?;
            f.load(s, p, off);
        }
        6..=7 => {
            let j = u.int_in_range(0..=RESOURCES - 1)?;
            let chunk = [32, 256, 1024, 4096][u.int_in_range(0..=3usize)?];
            f.begin(s, p, j, chunk);
        }
        8..=11 => {
            let n = u.arbitrary()?;
            f.step(n);
        }
        12 => {
            let n = u.arbitrary()?;
            f.cancel(n);
        }
        13 => f.unmap(s, p),
        14 => {
            let frame = if u.arbitrary()? {
                page_frame(s, p)
            } else {
                res_frame(s, u.int_in_range(0..=RESOURCES - 1)?)
            };
            f.reinit(frame);
            f.rebuild();
        }
        _ => {
            let to = match u.int_in_range(0..=3u8)? {
                0 => FrameState::Resource,
                1 => FrameState::User(sid(s)),
                2 => FrameState::User(sid(s % SPACES + 1)),
                _ => FrameState::Undefined,
            };
            f.change_state(s, p, to);
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut storage = Storage::new();
    let mut k = Kernel::new(&mut storage);
    for s in 1..=SPACES {
        for p in 0..PAGES {
            k.user_page(s, page_va(p), page_frame(s, p), PageSizeKind::Small, true);
        }
        for j in 0..RESOURCES {
            k.maps.map(
                us(s),
                res_va(j),
                res_frame(s, j),
                PageSizeKind::Small,
                false,
            );
        }
    }
    let n = usize::from(SPACES) * PAGES as usize;
    let mut f = Fuzz {
        k,
        content: vec![vec![0; 4096]; n],
        mapped: vec![true; n],
        active: Vec::new(),
    };
    let mut u = Unstructured::new(data);
    let mut ops = 0;
    while !u.is_empty() && ops < 500 {
        if step(&mut f, &mut u).is_err() {
            break;
        }
        f.check_summaries();
        if f.active.is_empty() {
            assert_eq!(
                f.k.table.busy_frames(),
                0,
                "a frame is busy with no exchange"
            );
        }
        ops += 1;
    }
    while !f.active.is_empty() {
        f.cancel(0);
    }
    assert_eq!(f.k.table.busy_frames(), 0);
});
