//! Physical 4 KiB frames for user memory: a bitmap over a RAM range the
//! kernel image and the in-kernel tests' scratch MiBs never use.

/// First physical address handed out (the board's, [`crate::board::LAYOUT`]).
pub const FRAMES_PHYS: u32 = crate::board::LAYOUT.frames_phys;
/// One past the last frame: the emulated TCM follows ([`super::tcm`]).
pub const FRAMES_END: u32 = crate::board::LAYOUT.frames_end;
/// Frames in the range (on versatilepb 57 MiB, up to the emulated TCM near the end of the 128 MiB of RAM).
pub const FRAME_COUNT: usize = ((FRAMES_END - FRAMES_PHYS) / 4096) as usize;
const WORDS: usize = FRAME_COUNT.div_ceil(32);

/// The frame bitmap (1 = in use).
pub struct Frames {
    used: [u32; WORDS],
    free: usize,
}

impl Frames {
    /// Every frame free.
    pub const fn new() -> Frames {
        Frames {
            used: [0; WORDS],
            free: FRAME_COUNT,
        }
    }

    /// Frames still free.
    pub fn free(&self) -> usize {
        self.free
    }

    /// Takes one frame and zeroes it (through the kernel's linear map);
    /// `None` when none is left.
    pub fn alloc(&mut self) -> Option<u32> {
        for (w, bits) in self.used.iter_mut().enumerate() {
            if *bits != u32::MAX {
                let b = (!*bits).trailing_zeros();
                let idx = w * 32 + b as usize;
                if idx >= FRAME_COUNT {
                    return None;
                }
                *bits |= 1 << b;
                self.free -= 1;
                let pa = FRAMES_PHYS + (idx as u32) * 4096;
                let va = crate::mmu::phys_to_virt(pa) as *mut u32;
                for i in 0..1024 {
                    // SAFETY: the frame was free, so nothing else refers to
                    // it; the kernel's linear map covers all RAM.
                    unsafe { va.add(i).write_volatile(0) };
                }
                return Some(pa);
            }
        }
        None
    }

    /// Gives frame `pa` back; `false` if it is not a frame of this range or not in use.
    pub fn release(&mut self, pa: u32) -> bool {
        let Some(off) = pa.checked_sub(FRAMES_PHYS) else {
            return false;
        };
        let idx = (off / 4096) as usize;
        if off % 4096 != 0 || idx >= FRAME_COUNT {
            return false;
        }
        let (w, b) = (idx / 32, idx % 32);
        if self.used[w] & (1 << b) == 0 {
            return false;
        }
        self.used[w] &= !(1 << b);
        self.free += 1;
        true
    }
}
