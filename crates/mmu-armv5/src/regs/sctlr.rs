//! SCTLR: the system control register (`c1, 0, c0, 0`).
//!
//! Bit positions follow the ARM Architecture Reference Manual (ARMv4/ARMv5)
//! and the ARM926EJ-S TRM (section 2.3.4, "Control register c1"):
//!
//! | bit | name | meaning |
//! |----:|------|---------|
//! | 0   | M    | MMU enable |
//! | 1   | A    | alignment fault checking |
//! | 2   | C    | D-cache (or unified cache) enable |
//! | 3   | W    | write buffer enable (should-be-one on ARM926EJ-S and XScale) |
//! | 4   | P    | 32-bit exception handlers (ARMv3 legacy, should-be-one) |
//! | 5   | D    | 26-bit address exception checking (ARMv3 legacy, should-be-one) |
//! | 6   | L    | late abort model (ARMv3 legacy, should-be-one) |
//! | 7   | B    | big-endian memory system |
//! | 8   | S    | system protection (modifies AP = `0b00`) |
//! | 9   | R    | ROM protection (modifies AP = `0b00`) |
//! | 10  | F    | implementation defined (zero on ARM926EJ-S and XScale) |
//! | 11  | Z    | branch prediction; on XScale the branch target buffer enable |
//! | 12  | I    | I-cache enable |
//! | 13  | V    | high exception vectors at `0xFFFF_0000` |
//! | 14  | RR   | round-robin cache replacement (ARM926EJ-S); reserved on XScale |
//! | 15  | L4   | ARMv4 compatibility: loads to PC do not set the T bit (ARM926EJ-S) |
//!
//! XScale notes: bits \[6:3\] read as one; bit 11 enables the BTB; bits
//! \[31:14\] are reserved (write as read). Cache write/read-allocate policy,
//! mini-data-cache attributes and the `P` page-attribute bit live in the
//! auxiliary control register (`c1, 0, c0, 1`), not here. After an SCTLR write
//! on XScale, software must execute CPWAIT before relying on the new setting
//! (QEMU applies it one instruction late otherwise).
//!
//! StrongARM SA-1100/SA-1110 implement M, A, C, W, B, S, R, I (bit 12) and V
//! (bit 13); bit 11 and bits \[31:14\] are reserved.

use super::field;
use core::fmt;
use tock_registers::debug::RegisterDebugInfo;
use tock_registers::fields::{Field, FieldValue};
use tock_registers::LocalRegisterCopy;

pub use fields::SCTLR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// SCTLR bit fields.
    pub SCTLR [
        /// MMU enable.
        M OFFSET(0) NUMBITS(1) [],
        /// Alignment fault checking enable.
        A OFFSET(1) NUMBITS(1) [],
        /// D-cache (unified cache) enable.
        C OFFSET(2) NUMBITS(1) [],
        /// Write buffer enable (should-be-one on ARM926EJ-S and XScale).
        W OFFSET(3) NUMBITS(1) [],
        /// 32-bit exception handlers (legacy, should-be-one).
        P OFFSET(4) NUMBITS(1) [],
        /// 26-bit address exception checking disabled (legacy, should-be-one).
        D OFFSET(5) NUMBITS(1) [],
        /// Late abort model (legacy, should-be-one).
        L OFFSET(6) NUMBITS(1) [],
        /// Big-endian memory system.
        B OFFSET(7) NUMBITS(1) [],
        /// System protection.
        S OFFSET(8) NUMBITS(1) [],
        /// ROM protection.
        R OFFSET(9) NUMBITS(1) [],
        /// Implementation defined.
        F OFFSET(10) NUMBITS(1) [],
        /// Branch prediction (XScale: branch target buffer) enable.
        Z OFFSET(11) NUMBITS(1) [],
        /// I-cache enable.
        I OFFSET(12) NUMBITS(1) [],
        /// High vectors (0xFFFF_0000).
        V OFFSET(13) NUMBITS(1) [],
        /// Round-robin replacement (ARM926EJ-S).
        RR OFFSET(14) NUMBITS(1) [],
        /// ARMv4 compatibility for loads to PC (ARM926EJ-S).
        L4 OFFSET(15) NUMBITS(1) []
    ]
    ];
}

/// An SCTLR value.
///
/// A plain value: reading or building one touches no hardware. Read the live
/// register with [`Cp15Ext::sctlr`](super::Cp15Ext::sctlr) and write it with
/// the `unsafe` [`Cp15Ext::set_sctlr`](super::Cp15Ext::set_sctlr).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Sctlr(u32);

/// A getter and a `with_*` builder for a one-bit SCTLR field, both built on
/// the field's `tock-registers` definition in [`SCTLR`].
macro_rules! sctlr_bit {
    ($(#[$doc:meta])* $get:ident, $with:ident, $field:ident) => {
        $(#[$doc])*
        #[inline]
        #[must_use]
        pub const fn $get(self) -> bool {
            field::is_set(self.0, SCTLR::$field)
        }

        /// This value with the bit described at the getter of the same name set to `on`.
        #[inline]
        #[must_use]
        pub const fn $with(self, on: bool) -> Sctlr {
            Sctlr(field::write_flag(self.0, SCTLR::$field, on))
        }
    };
}

impl Sctlr {
    /// A value from the raw register bits.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Sctlr {
        Sctlr(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    sctlr_bit!(
        /// M (bit 0): the MMU is enabled.
        mmu_enabled, with_mmu, M
    );
    sctlr_bit!(
        /// A (bit 1): alignment faults are checked.
        alignment_check, with_alignment_check, A
    );
    sctlr_bit!(
        /// C (bit 2): the D-cache (or unified cache) is enabled.
        dcache_enabled, with_dcache, C
    );
    sctlr_bit!(
        /// W (bit 3): the write buffer is enabled (reads as one on ARM926EJ-S and XScale).
        write_buffer_enabled, with_write_buffer, W
    );
    sctlr_bit!(
        /// B (bit 7): the memory system is big-endian.
        big_endian, with_big_endian, B
    );
    sctlr_bit!(
        /// S (bit 8): system protection, changes the meaning of AP = `0b00`.
        system_protection, with_system_protection, S
    );
    sctlr_bit!(
        /// R (bit 9): ROM protection, changes the meaning of AP = `0b00`.
        rom_protection, with_rom_protection, R
    );
    sctlr_bit!(
        /// Z (bit 11): branch prediction; the branch target buffer on XScale.
        branch_prediction, with_branch_prediction, Z
    );
    sctlr_bit!(
        /// I (bit 12): the I-cache is enabled.
        icache_enabled, with_icache, I
    );
    sctlr_bit!(
        /// V (bit 13): exception vectors are at `0xFFFF_0000` (high vectors).
        high_vectors, with_high_vectors, V
    );
    sctlr_bit!(
        /// RR (bit 14): round-robin cache replacement (ARM926EJ-S; reserved on XScale).
        round_robin, with_round_robin, RR
    );
    sctlr_bit!(
        /// L4 (bit 15): loads to PC do not change the Thumb state (ARM926EJ-S).
        armv4_compat, with_armv4_compat, L4
    );

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, SCTLR::Register> {
        LocalRegisterCopy::new(self.0)
    }

    /// Reads one field, e.g. `sctlr.read(SCTLR::V)`.
    #[inline]
    #[must_use]
    pub fn read(self, field: Field<u32, SCTLR::Register>) -> u32 {
        field.read(self.0)
    }

    /// This value with the fields of `fv` changed, e.g.
    /// `sctlr.modify(SCTLR::M::SET + SCTLR::C::SET)`.
    #[inline]
    #[must_use]
    pub fn modify(self, fv: FieldValue<u32, SCTLR::Register>) -> Sctlr {
        Sctlr(fv.modify(self.0))
    }
}

impl fmt::Debug for Sctlr {
    /// The raw value and the names of the [`SCTLR`] fields that are set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sctlr({:#010x}:", self.0)?;
        let fields = SCTLR::Register::fields();
        for (name, fld) in SCTLR::Register::field_names().iter().zip(fields) {
            if field::is_set(self.0, *fld) {
                write!(f, " {name}")?;
            }
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::format;

    type Get = fn(Sctlr) -> bool;
    type With = fn(Sctlr, bool) -> Sctlr;

    /// The accessors of the [`SCTLR`] field `name`; `None` for the fields
    /// with none (the ARMv3 legacy bits and the implementation-defined `F`).
    /// Panics on a field it does not know, so a field added to the table
    /// fails the test until its accessors are listed here.
    fn accessors(name: &str) -> Option<(Get, With)> {
        let pair: (Get, With) = match name {
            "M" => (Sctlr::mmu_enabled, Sctlr::with_mmu),
            "A" => (Sctlr::alignment_check, Sctlr::with_alignment_check),
            "C" => (Sctlr::dcache_enabled, Sctlr::with_dcache),
            "W" => (Sctlr::write_buffer_enabled, Sctlr::with_write_buffer),
            "B" => (Sctlr::big_endian, Sctlr::with_big_endian),
            "S" => (Sctlr::system_protection, Sctlr::with_system_protection),
            "R" => (Sctlr::rom_protection, Sctlr::with_rom_protection),
            "Z" => (Sctlr::branch_prediction, Sctlr::with_branch_prediction),
            "I" => (Sctlr::icache_enabled, Sctlr::with_icache),
            "V" => (Sctlr::high_vectors, Sctlr::with_high_vectors),
            "RR" => (Sctlr::round_robin, Sctlr::with_round_robin),
            "L4" => (Sctlr::armv4_compat, Sctlr::with_armv4_compat),
            "P" | "D" | "L" | "F" => return None,
            other => panic!("SCTLR::{other} has no accessors listed"),
        };
        Some(pair)
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// Every const accessor reads and writes exactly its `tock-registers` field.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>(), on in any::<bool>()) {
            let v = Sctlr::from_bits(bits);
            let fields = SCTLR::Register::fields();
            for (name, f) in SCTLR::Register::field_names().iter().zip(fields) {
                let Some((get, with)) = accessors(name) else { continue };
                prop_assert_eq!(get(v), v.as_register().is_set(*f), "{}", name);
                prop_assert_eq!(u32::from(get(v)), v.read(*f), "{}", name);
                let fv = if on { f.val(1) } else { f.val(0) };
                prop_assert_eq!(with(v, on), v.modify(fv), "{}", name);
            }
        }
    }

    #[test]
    fn accessors_work_in_const_context() {
        const V: Sctlr = Sctlr::from_bits(0).with_mmu(true).with_high_vectors(true);
        const { assert!(V.mmu_enabled() && V.high_vectors() && !V.dcache_enabled()) };
        assert_eq!(V.bits(), 1 | (1 << 13));
    }

    #[test]
    fn bits_sit_where_the_manual_puts_them() {
        let cases: [(With, Get, u32); 12] = [
            (Sctlr::with_mmu, Sctlr::mmu_enabled, 0),
            (Sctlr::with_alignment_check, Sctlr::alignment_check, 1),
            (Sctlr::with_dcache, Sctlr::dcache_enabled, 2),
            (Sctlr::with_write_buffer, Sctlr::write_buffer_enabled, 3),
            (Sctlr::with_big_endian, Sctlr::big_endian, 7),
            (Sctlr::with_system_protection, Sctlr::system_protection, 8),
            (Sctlr::with_rom_protection, Sctlr::rom_protection, 9),
            (Sctlr::with_branch_prediction, Sctlr::branch_prediction, 11),
            (Sctlr::with_icache, Sctlr::icache_enabled, 12),
            (Sctlr::with_high_vectors, Sctlr::high_vectors, 13),
            (Sctlr::with_round_robin, Sctlr::round_robin, 14),
            (Sctlr::with_armv4_compat, Sctlr::armv4_compat, 15),
        ];
        for (with, get, bit) in cases {
            let on = with(Sctlr::default(), true);
            assert_eq!(on.bits(), 1 << bit, "bit {bit}");
            assert!(get(on));
            let all = Sctlr::from_bits(u32::MAX);
            let off = with(all, false);
            assert_eq!(off.bits(), !(1 << bit), "bit {bit}");
            assert!(!get(off));
        }
    }

    #[test]
    fn tock_fields_agree_with_accessors() {
        let v = Sctlr::default().modify(SCTLR::M::SET + SCTLR::C::SET + SCTLR::V::SET);
        assert_eq!(v.bits(), 0b10_0000_0000_0101);
        assert!(v.mmu_enabled() && v.dcache_enabled() && v.high_vectors());
        assert_eq!(v.read(SCTLR::V), 1);
        assert_eq!(v.read(SCTLR::I), 0);
        assert!(v.as_register().is_set(SCTLR::M));
        assert_eq!(SCTLR::RR.shift, 14);
        assert_eq!(SCTLR::L4.shift, 15);
        assert_eq!(SCTLR::B.shift, 7);
    }

    #[test]
    fn qemu_arm926_reset_value() {
        // QEMU's arm926 reset SCTLR: W, P, D, L set, plus should-be-one bits 16 and 19.
        let v = Sctlr::from_bits(0x0009_0078);
        assert!(!v.mmu_enabled());
        assert!(v.write_buffer_enabled());
        assert!(!v.dcache_enabled() && !v.icache_enabled() && !v.high_vectors());
        assert_eq!(format!("{v:?}"), "Sctlr(0x00090078: W P D L)");
    }
}
