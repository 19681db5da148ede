//! A set of first-level slots (1 MiB each, 4096 in all) in 128 `u32` words,
//! with a summary of the words in use so that iterating and clearing cost
//! O(words ever used), at most 128, not O(4096).

use crate::layout::SLOT_COUNT;

const WORDS: usize = SLOT_COUNT / 32;

/// A set of first-level slot indices (`0..4096`).
///
/// 128 words of 32 bits plus a 128-bit summary (four 32-bit words, cheap on
/// a 32-bit core) whose bit `w` is set if word `w` may be non-zero: set when
/// a member is added to the word, left set when the word empties (a removal
/// touches one word and the length only), cleared by [`SlotSet::drain`]. Iterating
/// skips the empty words it names. Out-of-range indices are never members
/// and are ignored by [`SlotSet::insert`] (which reports it).
#[derive(Clone)]
pub struct SlotSet {
    words: [u32; WORDS],
    summary: [u32; 4],
    len: u16,
}

impl Default for SlotSet {
    fn default() -> Self {
        Self::new()
    }
}

/// Set equality: the same members (the summaries may differ in words that
/// emptied).
impl PartialEq for SlotSet {
    fn eq(&self, other: &SlotSet) -> bool {
        self.len == other.len && self.words == other.words
    }
}

impl Eq for SlotSet {}

impl core::fmt::Debug for SlotSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl SlotSet {
    /// The empty set.
    #[must_use]
    pub const fn new() -> SlotSet {
        SlotSet {
            words: [0; WORDS],
            summary: [0; 4],
            len: 0,
        }
    }

    /// Number of members.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the set is empty.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `slot` is a member.
    #[must_use]
    pub fn contains(&self, slot: usize) -> bool {
        match self.words.get(slot / 32) {
            Some(w) => w & (1 << (slot % 32)) != 0,
            None => false,
        }
    }

    /// Adds `slot`; returns `true` if it was not a member. A slot outside
    /// `0..4096` is not added and returns `false`.
    #[inline(always)]
    pub fn insert(&mut self, slot: usize) -> bool {
        let Some(w) = self.words.get_mut(slot / 32) else {
            return false;
        };
        let bit = 1 << (slot % 32);
        if *w & bit != 0 {
            return false;
        }
        *w |= bit;
        let wi = slot / 32;
        self.summary[(wi / 32) % 4] |= 1 << (wi % 32);
        self.len += 1;
        true
    }

    /// Removes `slot`; returns `true` if it was a member.
    #[inline(always)]
    pub fn remove(&mut self, slot: usize) -> bool {
        let Some(w) = self.words.get_mut(slot / 32) else {
            return false;
        };
        let bit = 1 << (slot % 32);
        if *w & bit == 0 {
            return false;
        }
        *w &= !bit;
        self.len -= 1;
        true
    }

    /// Adds `slot` (taken modulo 4096), which must not be a member
    /// (checked in debug builds): [`SlotSet::insert`] without the tests,
    /// for the fast fault path, which knows.
    #[inline(always)]
    pub(crate) fn insert_new(&mut self, slot: usize) {
        let slot = slot % SLOT_COUNT;
        debug_assert!(!self.contains(slot));
        let wi = slot / 32;
        self.words[wi] |= 1 << (slot % 32);
        self.summary[wi / 32] |= 1 << (wi % 32);
        self.len += 1;
    }

    /// The members in increasing order; O(members).
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            set: self,
            summary: Summary(self.summary),
            word_index: 0,
            word: 0,
        }
    }

    /// Removes every member, calling `f` on each in increasing order; O(members).
    pub fn drain(&mut self, mut f: impl FnMut(usize)) {
        // Each summary word once, emptied as it is read (no call to clear
        // the summary afterwards: this runs on every domain recycle).
        for si in 0..self.summary.len() {
            let mut sbits = core::mem::take(&mut self.summary[si]);
            while sbits != 0 {
                let wi = si * 32 + sbits.trailing_zeros() as usize;
                sbits &= sbits - 1;
                let w = &mut self.words[wi % WORDS];
                let mut bits = core::mem::take(w);
                while bits != 0 {
                    let b = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    f(wi * 32 + b);
                }
            }
        }
        self.len = 0;
    }
}

/// The summary bits still to visit, lowest first.
struct Summary([u32; 4]);

impl Summary {
    /// The lowest set bit's index, cleared.
    fn pop(&mut self) -> Option<usize> {
        for (i, w) in self.0.iter_mut().enumerate() {
            if *w != 0 {
                let b = w.trailing_zeros() as usize;
                *w &= *w - 1;
                return Some(i * 32 + b);
            }
        }
        None
    }
}

/// Iterator over a [`SlotSet`]'s members.
pub struct Iter<'a> {
    set: &'a SlotSet,
    summary: Summary,
    word_index: usize,
    word: u32,
}

impl Iterator for Iter<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.word != 0 {
                let b = self.word.trailing_zeros() as usize;
                self.word &= self.word - 1;
                return Some(self.word_index * 32 + b);
            }
            self.word_index = self.summary.pop()?;
            self.word = self.set.words.get(self.word_index).copied().unwrap_or(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    #[test]
    fn out_of_range_is_never_a_member() {
        let mut s = SlotSet::new();
        assert!(!s.insert(4096));
        assert!(!s.contains(4096));
        assert!(!s.remove(usize::MAX));
        assert!(s.is_empty());
        assert!(s.insert(4095));
        assert!(s.insert(0));
        assert_eq!(s.iter().collect::<Vec<_>>(), [0, 4095]);
    }

    #[test]
    fn drain_visits_only_members() {
        let mut s = SlotSet::new();
        for slot in [31, 32, 33, 1000, 4064] {
            s.insert(slot);
        }
        let mut seen = Vec::new();
        s.drain(|x| seen.push(x));
        assert_eq!(seen, [31, 32, 33, 1000, 4064]);
        assert!(s.is_empty());
        assert_eq!(s.iter().count(), 0);
        assert_eq!(s, SlotSet::new());
    }

    proptest! {
        #![proptest_config(crate::proptest_config())]
        #[test]
        fn behaves_like_a_btreeset(ops in proptest::collection::vec((any::<bool>(), 0usize..4100), 0..300)) {
            let mut s = SlotSet::new();
            let mut model = BTreeSet::new();
            for (i, (add, slot)) in ops.into_iter().enumerate() {
                // Every third insertion through the unchecked one, when its
                // precondition holds.
                if i % 3 == 0 && add && slot < SLOT_COUNT && !model.contains(&slot) {
                    s.insert_new(slot);
                    model.insert(slot);
                } else if add {
                    let fresh = slot < SLOT_COUNT && model.insert(slot);
                    prop_assert_eq!(s.insert(slot), fresh);
                } else {
                    prop_assert_eq!(s.remove(slot), model.remove(&slot));
                }
                prop_assert_eq!(s.len(), model.len());
            }
            prop_assert_eq!(s.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            let mut rebuilt = SlotSet::new();
            for x in &model {
                rebuilt.insert(*x);
            }
            prop_assert_eq!(&s, &rebuilt);
            let mut drained = Vec::new();
            s.drain(|x| drained.push(x));
            prop_assert_eq!(drained, model.into_iter().collect::<Vec<_>>());
            prop_assert!(s.is_empty());
        }
    }
}
