//! Marker accesses: how a kernel built for the cache check tells an observer
//! outside the CPU (the `cache-check` QEMU plugin) what its CP15 operations
//! did.
//!
//! QEMU's plugin API (7.2) sees every executed instruction and every load
//! and store with its address, but neither register values nor the data
//! moved. A kernel built with `mmu-armv5`'s feature `cache-check` therefore
//! follows every `MCR p15` (and precedes nothing else) with two byte loads
//! from the *marker window*, [`WINDOW_BASE`] .. `WINDOW_BASE + WINDOW_SIZE`,
//! whose addresses carry the operation and its 32-bit operand:
//!
//! | access | address bits 23 | 22..10 | 9..0 / 21..0 |
//! |---|---|---|---|
//! | first | 0 | the 13-bit [`Key`] | value bits 31..22 |
//! | second | 1 | (bit 22 is 0) | value bits 21..0 |
//!
//! The two loads are issued back to back, with no other memory access
//! between them nor between them and the CP15 instruction they describe:
//! right before an `MCR` (the value written), right after an `MRC` (the
//! value read). An observer applies the effect when the second access
//! arrives. The window is mapped by the kernel (kernel-only, uncached, onto
//! any RAM: the loads' results are discarded) and is not part of the memory
//! being modelled.
//!
//! A key is either a CP15 access ([`Key::Cp15`]: direction, CRn, CRm,
//! opc2; opc1 is 0 for every CP15 operation of ARMv4/v5) or a pseudo
//! [`Event`] that tells the observer something no CP15 operation carries
//! (uncached regions, the running space, the scenario, an injected
//! omission).
//!
//! Everything here is plain arithmetic, host-testable: the kernel's
//! assembly and `HwCp15` (bare-metal ARM only) encode with [`first`] and
//! [`second`]; the plugin decodes with [`Decoder`].
//!
//! ```
//! use mmu_armv5::marker::{self, Decoder, Key};
//!
//! // The DACR write `MCR p15, 0, r0, c3, c0, 0` with r0 = 0x5555_0001.
//! let key = Key::Cp15 { read: false, crn: 3, crm: 0, opc2: 0 };
//! let (a, b) = (marker::first(key, 0x5555_0001), marker::second(0x5555_0001));
//! let mut d = Decoder::new();
//! assert_eq!(d.feed(a), Ok(None));
//! assert_eq!(d.feed(b), Ok(Some((key, 0x5555_0001))));
//! ```

/// First byte of the marker window (16 MiB, sixteen sections).
pub const WINDOW_BASE: u32 = 0xE000_0000;
/// Size of the marker window in bytes.
pub const WINDOW_SIZE: u32 = 16 << 20;
/// Address bit that tells the second access from the first.
pub const SECOND_BIT: u32 = 1 << 23;
/// Shift of the key in the first access's address.
pub const KEY_SHIFT: u32 = 10;
/// The operand bits the first access carries are `value >> HI_SHIFT`.
pub const HI_SHIFT: u32 = 22;
/// Mask of the operand bits the second access carries.
pub const LO_MASK: u32 = (1 << HI_SHIFT) - 1;
/// Bit of a raw key that marks a pseudo event rather than a CP15 access.
pub const EVENT_FLAG: u16 = 1 << 12;

/// What a marker describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// `MCR`/`MRC p15, 0, Rd, c<crn>, c<crm>, <opc2>`: `read` for `MRC`.
    Cp15 {
        /// `true` for `MRC` (the value was read), `false` for `MCR`.
        read: bool,
        /// CRn, 0..=15.
        crn: u8,
        /// CRm, 0..=15.
        crm: u8,
        /// opc2, 0..=7.
        opc2: u8,
    },
    /// A pseudo event.
    Event(Event),
}

/// Pseudo events: facts the observer needs that no CP15 operation carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Event {
    /// Value: first virtual address of a region the kernel maps uncached
    /// (or that is not behind the caches, like TCM) in every address space.
    UncachedBegin = 1,
    /// Value: one past the last virtual address of the region begun by the
    /// last [`Event::UncachedBegin`].
    UncachedEnd = 2,
    /// Value: the address space (`SpaceId`) that runs from now on.
    Space = 3,
    /// Value: the index of the scenario or in-kernel test that starts.
    Scenario = 4,
    /// Value: the maintenance omission injected in this boot (0: none).
    Omit = 5,
    /// The guest claims its D-cache holds no dirty line now (after a clean
    /// that is not one CP15 operation, such as the StrongARM's flush-region
    /// read); value unused. The observer checks the claim.
    AssertClean = 6,
}

impl Event {
    /// The event numbered `n`, if any.
    pub const fn from_u16(n: u16) -> Option<Event> {
        Some(match n {
            1 => Event::UncachedBegin,
            2 => Event::UncachedEnd,
            3 => Event::Space,
            4 => Event::Scenario,
            5 => Event::Omit,
            6 => Event::AssertClean,
            _ => return None,
        })
    }
}

impl Key {
    /// The 13-bit raw key.
    pub const fn raw(self) -> u16 {
        match self {
            Key::Cp15 {
                read,
                crn,
                crm,
                opc2,
            } => {
                ((read as u16) << 11)
                    | (((crn & 0xF) as u16) << 7)
                    | (((crm & 0xF) as u16) << 3)
                    | ((opc2 & 7) as u16)
            }
            Key::Event(e) => EVENT_FLAG | e as u16,
        }
    }

    /// The key of a raw 13-bit value, if it names one.
    pub const fn from_raw(raw: u16) -> Option<Key> {
        if raw >> 13 != 0 {
            return None;
        }
        if raw & EVENT_FLAG != 0 {
            match Event::from_u16(raw & 0xFFF) {
                Some(e) => Some(Key::Event(e)),
                None => None,
            }
        } else {
            Some(Key::Cp15 {
                read: raw & (1 << 11) != 0,
                crn: ((raw >> 7) & 0xF) as u8,
                crm: ((raw >> 3) & 0xF) as u8,
                opc2: (raw & 7) as u8,
            })
        }
    }
}

/// Address of the first access of the marker for `key` with `value`.
pub const fn first(key: Key, value: u32) -> u32 {
    WINDOW_BASE | ((key.raw() as u32) << KEY_SHIFT) | (value >> HI_SHIFT)
}

/// Address of the second access of a marker carrying `value`.
pub const fn second(value: u32) -> u32 {
    WINDOW_BASE | SECOND_BIT | (value & LO_MASK)
}

/// Whether `va` lies in the marker window.
pub const fn in_window(va: u32) -> bool {
    va.wrapping_sub(WINDOW_BASE) < WINDOW_SIZE
}

/// A marker stream that breaks the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The address is not in the marker window.
    OutsideWindow(u32),
    /// A second access with no first one before it.
    SecondWithoutFirst(u32),
    /// A first access while another first access waits for its second.
    FirstWithoutSecond {
        /// The first access that waited.
        pending: u32,
        /// The first access that came instead of a second.
        next: u32,
    },
    /// A first access whose key names nothing.
    UnknownKey(u32),
    /// A second access with address bit 22 set.
    BadSecond(u32),
}

/// Reassembles markers from the stream of window addresses.
#[derive(Clone, Copy, Debug, Default)]
pub struct Decoder {
    pending: Option<u32>,
}

impl Decoder {
    /// A decoder waiting for a first access.
    pub const fn new() -> Decoder {
        Decoder { pending: None }
    }

    /// Feeds one access at `va`: `Ok(Some((key, value)))` when it completes
    /// a marker, `Ok(None)` after a first access.
    ///
    /// # Errors
    /// A [`DecodeError`] when the stream breaks the protocol; the decoder
    /// then forgets any pending first access, except after
    /// [`DecodeError::FirstWithoutSecond`], where it keeps the new one.
    pub fn feed(&mut self, va: u32) -> Result<Option<(Key, u32)>, DecodeError> {
        if !in_window(va) {
            return Err(DecodeError::OutsideWindow(va));
        }
        let off = va - WINDOW_BASE;
        if off & SECOND_BIT == 0 {
            let raw = (off >> KEY_SHIFT) as u16;
            if Key::from_raw(raw).is_none() {
                self.pending = None;
                return Err(DecodeError::UnknownKey(va));
            }
            if let Some(pending) = self.pending.replace(va) {
                return Err(DecodeError::FirstWithoutSecond { pending, next: va });
            }
            return Ok(None);
        }
        let Some(first) = self.pending.take() else {
            return Err(DecodeError::SecondWithoutFirst(va));
        };
        if off & (1 << 22) != 0 {
            return Err(DecodeError::BadSecond(va));
        }
        let foff = first - WINDOW_BASE;
        let raw = (foff >> KEY_SHIFT) as u16;
        let key = match Key::from_raw(raw) {
            Some(k) => k,
            None => return Err(DecodeError::UnknownKey(first)),
        };
        let value = ((foff & ((1 << KEY_SHIFT) - 1)) << HI_SHIFT) | (off & LO_MASK);
        Ok(Some((key, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_key() -> impl Strategy<Value = Key> {
        prop_oneof![
            (any::<bool>(), 0u8..16, 0u8..16, 0u8..8).prop_map(|(read, crn, crm, opc2)| {
                Key::Cp15 {
                    read,
                    crn,
                    crm,
                    opc2,
                }
            }),
            (1u16..=6).prop_map(|n| Key::Event(Event::from_u16(n).unwrap())),
        ]
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]

        #[test]
        fn round_trip(key in any_key(), value in any::<u32>()) {
            let mut d = Decoder::new();
            let (a, b) = (first(key, value), second(value));
            prop_assert!(in_window(a) && in_window(b));
            prop_assert_eq!(d.feed(a), Ok(None));
            prop_assert_eq!(d.feed(b), Ok(Some((key, value))));
        }
    }

    #[test]
    fn broken_streams_are_errors() {
        let key = Key::Event(Event::Space);
        let mut d = Decoder::new();
        assert_eq!(
            d.feed(second(5)),
            Err(DecodeError::SecondWithoutFirst(second(5)))
        );
        assert_eq!(d.feed(first(key, 5)), Ok(None));
        assert_eq!(
            d.feed(first(key, 6)),
            Err(DecodeError::FirstWithoutSecond {
                pending: first(key, 5),
                next: first(key, 6)
            })
        );
        assert_eq!(d.feed(second(6)), Ok(Some((key, 6))));
        assert_eq!(d.feed(0x1000), Err(DecodeError::OutsideWindow(0x1000)));
        let unknown = WINDOW_BASE | ((EVENT_FLAG as u32 | 0x7F) << KEY_SHIFT);
        assert_eq!(d.feed(unknown), Err(DecodeError::UnknownKey(unknown)));
        assert_eq!(
            d.feed(WINDOW_BASE | SECOND_BIT | (1 << 22)),
            Err(DecodeError::SecondWithoutFirst(
                WINDOW_BASE | SECOND_BIT | (1 << 22)
            ))
        );
    }

    #[test]
    fn keys_of_the_switch_registers() {
        let dacr = Key::Cp15 {
            read: false,
            crn: 3,
            crm: 0,
            opc2: 0,
        };
        assert_eq!(dacr.raw(), 3 << 7);
        assert_eq!(first(dacr, 0), 0xE000_0000 | (3 << 17));
        assert_eq!(Key::from_raw(dacr.raw()), Some(dacr));
        assert_eq!(Key::from_raw(1 << 13), None);
    }
}
