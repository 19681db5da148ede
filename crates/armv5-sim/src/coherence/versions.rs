//! Per physical word: the newest version (what QEMU holds) and the version
//! RAM holds, in a sparse page map (pages are allocated on the first write;
//! an absent page holds version 0 in both).

/// A version no store ever creates: the contents of a line allocated
/// without a fill (XScale line allocate). It never equals a newest version.
pub(crate) const GARBAGE: u32 = u32::MAX;

const PAGE_SHIFT: u32 = 12;
const WORDS_PER_PAGE: usize = 1 << (PAGE_SHIFT - 2);

/// Versions of every physical word.
#[derive(Clone, Debug)]
pub(crate) struct Versions {
    /// Per 4 KiB physical page: 0 when absent, else 1 + its index in `pages`.
    dir: Vec<u32>,
    /// Per present page, `2 * WORDS_PER_PAGE` entries: newest, ram, newest, ram...
    words: Vec<u32>,
}

impl Versions {
    pub(crate) fn new() -> Versions {
        Versions {
            dir: vec![0; 1 << (32 - PAGE_SHIFT)],
            words: Vec::new(),
        }
    }

    /// Index of the word's `newest` entry, if its page is present.
    #[inline(always)]
    fn slot(&self, pa: u32) -> Option<usize> {
        let d = self.dir[(pa >> PAGE_SHIFT) as usize];
        if d == 0 {
            None
        } else {
            Some(
                ((d - 1) as usize * WORDS_PER_PAGE + ((pa >> 2) as usize & (WORDS_PER_PAGE - 1)))
                    * 2,
            )
        }
    }

    #[inline(always)]
    fn slot_mut(&mut self, pa: u32) -> usize {
        let page = (pa >> PAGE_SHIFT) as usize;
        if self.dir[page] == 0 {
            self.words.resize(self.words.len() + 2 * WORDS_PER_PAGE, 0);
            self.dir[page] = (self.words.len() / (2 * WORDS_PER_PAGE)) as u32;
        }
        ((self.dir[page] - 1) as usize * WORDS_PER_PAGE
            + ((pa >> 2) as usize & (WORDS_PER_PAGE - 1)))
            * 2
    }

    /// The newest version of the word at `pa`.
    #[inline(always)]
    pub(crate) fn newest(&self, pa: u32) -> u32 {
        self.slot(pa).map_or(0, |s| self.words[s])
    }

    /// The version RAM holds at `pa`.
    #[inline]
    pub(crate) fn ram(&self, pa: u32) -> u32 {
        self.slot(pa).map_or(0, |s| self.words[s + 1])
    }

    /// Whether RAM holds the newest version at `pa`.
    #[inline(always)]
    pub(crate) fn ram_is_newest(&self, pa: u32) -> bool {
        self.slot(pa)
            .is_none_or(|s| self.words[s] == self.words[s + 1])
    }

    /// A store to `pa`: creates and returns a new newest version.
    #[inline(always)]
    pub(crate) fn store(&mut self, pa: u32) -> u32 {
        let s = self.slot_mut(pa);
        let mut v = self.words[s].wrapping_add(1);
        if v == GARBAGE {
            v = 0;
        }
        self.words[s] = v;
        v
    }

    /// RAM at `pa` now holds version `v`.
    #[inline(always)]
    pub(crate) fn set_ram(&mut self, pa: u32, v: u32) {
        if v == 0 && self.slot(pa).is_none() {
            return;
        }
        let s = self.slot_mut(pa);
        self.words[s + 1] = v;
    }

    /// Bytes of version state allocated (for reports).
    pub(crate) fn bytes(&self) -> usize {
        self.dir.len() * 4 + self.words.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_and_write_back() {
        let mut v = Versions::new();
        assert_eq!((v.newest(0x1000), v.ram(0x1000)), (0, 0));
        assert!(v.ram_is_newest(0x1000));
        let a = v.store(0x1004);
        assert_eq!(a, 1);
        assert!(!v.ram_is_newest(0x1004));
        assert!(v.ram_is_newest(0x1000), "neighbour word untouched");
        v.set_ram(0x1004, a);
        assert!(v.ram_is_newest(0x1004));
        assert_eq!(v.store(0xFFFF_FFFC), 1, "last word of the space");
        v.set_ram(0x2000, 0);
        assert_eq!(v.ram(0x2000), 0);
    }
}
