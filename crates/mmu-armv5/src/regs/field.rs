//! `const fn` access to `tock-registers` fields.
//!
//! Each register's `register_bitfields!` table is the one place its bit
//! offsets and widths are written. The value types' accessors are `const fn`,
//! and [`Field::read`] and [`FieldValue::modify`](tock_registers::fields::FieldValue::modify)
//! are not, so the accessors go through these helpers instead. They read
//! the offset and width out of the [`Field`] constant itself (its public
//! `shift` and `mask`), so an accessor names its field and never restates
//! where it sits.
//!
//! Every helper is generic over the register the field belongs to; the
//! per-register tests check each accessor against `tock-registers`' own
//! `read` and `modify` on random values.

use tock_registers::fields::Field;
use tock_registers::RegisterLongName;

/// The value of `field` in `bits`, shifted down (like [`Field::read`]).
#[inline]
#[must_use]
pub(crate) const fn read<R: RegisterLongName>(bits: u32, field: Field<u32, R>) -> u32 {
    (bits >> field.shift) & field.mask
}

/// Whether any bit of `field` is set in `bits` (like [`Field::is_set`]).
#[inline]
#[must_use]
pub(crate) const fn is_set<R: RegisterLongName>(bits: u32, field: Field<u32, R>) -> bool {
    bits & mask(field) != 0
}

/// The bits `field` covers, in place.
#[inline]
#[must_use]
pub(crate) const fn mask<R: RegisterLongName>(field: Field<u32, R>) -> u32 {
    field.mask << field.shift
}

/// `value` placed in `field`, every other bit zero; bits of `value` beyond
/// the field's width are dropped (like `FieldValue::value` of
/// [`Field::val`]).
#[inline]
#[must_use]
pub(crate) const fn place<R: RegisterLongName>(field: Field<u32, R>, value: u32) -> u32 {
    (value & field.mask) << field.shift
}

/// `bits` with `field` set to `value` (like
/// [`FieldValue::modify`](tock_registers::fields::FieldValue::modify)).
#[inline]
#[must_use]
pub(crate) const fn write<R: RegisterLongName>(bits: u32, field: Field<u32, R>, value: u32) -> u32 {
    (bits & !mask(field)) | place(field, value)
}

/// `bits` with every bit of `field` set to `on`.
#[inline]
#[must_use]
pub(crate) const fn write_flag<R: RegisterLongName>(
    bits: u32,
    field: Field<u32, R>,
    on: bool,
) -> u32 {
    if on {
        bits | mask(field)
    } else {
        bits & !mask(field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::{
        CACHE_SIZE, CTR, DACR, FCSEIDR, FSR, MIDR, SCTLR, TCM_REGION, TCM_STATUS, TTBR,
    };
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    /// Asserts that the fields of `R` fit in 32 bits, are contiguous masks,
    /// and that no two of them share a bit: a mistyped offset in a
    /// `register_bitfields!` table usually breaks one of these.
    fn assert_fields_are_disjoint<R: RegisterDebugInfo<u32> + 'static>() {
        let mut seen = 0u32;
        for (name, f) in R::field_names().iter().zip(R::fields()) {
            let width = f.mask.count_ones() as usize;
            assert!(width > 0, "{}::{name} is empty", R::name());
            assert_eq!(f.mask, u32::MAX >> (32 - width), "{}::{name}", R::name());
            assert!(f.shift + width <= 32, "{}::{name} overflows", R::name());
            assert_eq!(seen & mask(*f), 0, "{}::{name} overlaps", R::name());
            seen |= mask(*f);
        }
    }

    #[test]
    fn every_register_has_disjoint_fields() {
        assert_fields_are_disjoint::<SCTLR::Register>();
        assert_fields_are_disjoint::<DACR::Register>();
        assert_fields_are_disjoint::<FSR::Register>();
        assert_fields_are_disjoint::<TTBR::Register>();
        assert_fields_are_disjoint::<FCSEIDR::Register>();
        assert_fields_are_disjoint::<MIDR::Register>();
        assert_fields_are_disjoint::<CTR::Register>();
        assert_fields_are_disjoint::<CACHE_SIZE::Register>();
        assert_fields_are_disjoint::<TCM_STATUS::Register>();
        assert_fields_are_disjoint::<TCM_REGION::Register>();
    }

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// The helpers agree with `tock-registers` on every field of every
        /// register, so an accessor built on them agrees with its field.
        #[test]
        fn helpers_agree_with_tock(bits in any::<u32>(), value in any::<u32>()) {
            fn check<R: RegisterDebugInfo<u32> + 'static>(bits: u32, value: u32) -> Result<(), TestCaseError> {
                for (name, f) in R::field_names().iter().zip(R::fields()) {
                    let f = *f;
                    prop_assert_eq!(read(bits, f), f.read(bits), "{}", name);
                    prop_assert_eq!(is_set(bits, f), f.is_set(bits), "{}", name);
                    prop_assert_eq!(place(f, value), f.val(value).value, "{}", name);
                    prop_assert_eq!(write(bits, f, value), f.val(value).modify(bits), "{}", name);
                    prop_assert_eq!(
                        write_flag(bits, f, true),
                        f.val(f.mask).modify(bits),
                        "{}",
                        name
                    );
                    prop_assert_eq!(write_flag(bits, f, false), f.val(0).modify(bits), "{}", name);
                }
                Ok(())
            }
            check::<SCTLR::Register>(bits, value)?;
            check::<DACR::Register>(bits, value)?;
            check::<FSR::Register>(bits, value)?;
            check::<TTBR::Register>(bits, value)?;
            check::<FCSEIDR::Register>(bits, value)?;
            check::<MIDR::Register>(bits, value)?;
            check::<CTR::Register>(bits, value)?;
            check::<CACHE_SIZE::Register>(bits, value)?;
            check::<TCM_STATUS::Register>(bits, value)?;
            check::<TCM_REGION::Register>(bits, value)?;
        }
    }
}
