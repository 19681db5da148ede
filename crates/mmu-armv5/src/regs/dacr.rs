//! DACR: the domain access control register (`c3, 0, c0, 0`).
//!
//! Sixteen two-bit fields, one per domain: no access, client (access
//! permissions checked), reserved (faults like no access), manager (no
//! permission checks). A DACR write takes effect at once, without any TLB
//! maintenance: TLB entries keep their domain and are checked against the
//! current DACR on every access. That is what makes domains usable as
//! address-space tags.

use super::field;
use crate::addr::Domain;
use core::fmt;
use tock_registers::fields::Field;
use tock_registers::LocalRegisterCopy;

pub use fields::DACR;

/// `tock-registers` field definitions (the macro's generated items carry no docs of their own).
#[allow(missing_docs)]
mod fields {
    use tock_registers::register_bitfields;

    register_bitfields![u32,
    /// DACR bit fields: `Dn` is the access of domain `n`.
    pub DACR [
        /// Domain 0.
        D0 OFFSET(0) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 1.
        D1 OFFSET(2) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 2.
        D2 OFFSET(4) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 3.
        D3 OFFSET(6) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 4.
        D4 OFFSET(8) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 5.
        D5 OFFSET(10) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 6.
        D6 OFFSET(12) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 7.
        D7 OFFSET(14) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 8.
        D8 OFFSET(16) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 9.
        D9 OFFSET(18) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 10.
        D10 OFFSET(20) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 11.
        D11 OFFSET(22) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 12.
        D12 OFFSET(24) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 13.
        D13 OFFSET(26) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 14.
        D14 OFFSET(28) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3],
        /// Domain 15.
        D15 OFFSET(30) NUMBITS(2) [NoAccess = 0, Client = 1, Reserved = 2, Manager = 3]
    ]
    ];
}

/// The access a domain grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum DomainAccess {
    /// `0b00`: every access faults with a domain fault.
    NoAccess = 0,
    /// `0b01`: accesses are checked against the descriptor's access permissions.
    Client = 1,
    /// `0b10`: reserved; behaves as no access.
    Reserved = 2,
    /// `0b11`: accesses are not checked; no permission fault can occur.
    Manager = 3,
}

impl DomainAccess {
    /// Decodes a two-bit field (the low two bits of `bits`).
    #[must_use]
    pub const fn from_bits(bits: u32) -> DomainAccess {
        match bits & DACR::D0.mask {
            0 => DomainAccess::NoAccess,
            1 => DomainAccess::Client,
            2 => DomainAccess::Reserved,
            _ => DomainAccess::Manager,
        }
    }
}

/// A DACR value.
///
/// Built and inspected per domain; the raw value is what the hardware
/// register holds. Use it as a mask, too: [`Dacr::union`] is one OR, which is
/// how FASS keeps its "dirty domains" set in DACR format.
///
/// ```
/// use mmu_armv5::regs::{Dacr, DomainAccess};
/// use mmu_armv5::Domain;
///
/// let (kernel, user) = (Domain::new(0).unwrap(), Domain::new(3).unwrap());
/// let dacr = Dacr::only(kernel, DomainAccess::Client).with(user, DomainAccess::Manager);
/// assert_eq!(dacr.bits(), 0b11_00_00_01); // D3 manager, D0 client
/// assert_eq!(dacr.get(user), DomainAccess::Manager);
/// assert_eq!(dacr.get(Domain::new(1).unwrap()), DomainAccess::NoAccess);
///
/// // As a mask: dirty domains are ORed in and cleared per domain.
/// let dirty = Dacr::NONE.union(dacr);
/// assert!(dirty.contains(user));
/// assert!(!dirty.difference(Dacr::only(user, DomainAccess::Manager)).contains(user));
/// assert_eq!(Dacr::ALL_CLIENT.get(Domain::new(15).unwrap()), DomainAccess::Client);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct Dacr(u32);

impl Dacr {
    /// Every domain no access.
    pub const NONE: Dacr = Dacr(0);
    /// Every domain client.
    pub const ALL_CLIENT: Dacr = Dacr::splat(DomainAccess::Client);
    /// Every domain manager.
    pub const ALL_MANAGER: Dacr = Dacr::splat(DomainAccess::Manager);

    /// The [`DACR`] field of `domain`: `Dn` for domain `n`.
    ///
    /// Computed rather than looked up in a table of the sixteen fields, so
    /// [`Dacr::get`] and [`Dacr::with`] stay a shift and a mask: field `Dn`
    /// is `D0` moved up by `n` times `D1`'s offset. The tests check the
    /// result against each named field.
    #[inline]
    const fn field(domain: Domain) -> Field<u32, DACR::Register> {
        Field::new(DACR::D0.mask, DACR::D1.shift * domain.get() as usize)
    }

    /// Every domain set to `access`.
    const fn splat(access: DomainAccess) -> Dacr {
        let mut v = Dacr::NONE;
        let mut d = 0;
        while d < Domain::COUNT {
            v = v.with(Domain::from_low_bits(d as u32), access);
            d += 1;
        }
        v
    }

    /// A DACR from its raw value.
    #[inline]
    #[must_use]
    pub const fn from_bits(bits: u32) -> Dacr {
        Dacr(bits)
    }

    /// The raw register value.
    #[inline]
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The access of `domain`.
    #[inline]
    #[must_use]
    pub const fn get(self, domain: Domain) -> DomainAccess {
        DomainAccess::from_bits(field::read(self.0, Dacr::field(domain)))
    }

    /// This value with `domain` set to `access`.
    #[inline]
    #[must_use]
    pub const fn with(self, domain: Domain, access: DomainAccess) -> Dacr {
        Dacr(field::write(self.0, Dacr::field(domain), access as u32))
    }

    /// The two-bit field of `domain` set to `access`, every other domain no access.
    #[inline]
    #[must_use]
    pub const fn only(domain: Domain, access: DomainAccess) -> Dacr {
        Dacr::NONE.with(domain, access)
    }

    /// Bitwise OR of two values (for masks in DACR format).
    #[inline]
    #[must_use]
    pub const fn union(self, other: Dacr) -> Dacr {
        Dacr(self.0 | other.0)
    }

    /// Bitwise AND-NOT: `self` with every field set in `other` cleared.
    #[inline]
    #[must_use]
    pub const fn difference(self, other: Dacr) -> Dacr {
        Dacr(self.0 & !other.0)
    }

    /// Whether any field of `domain` is non-zero.
    #[inline]
    #[must_use]
    pub const fn contains(self, domain: Domain) -> bool {
        field::is_set(self.0, Dacr::field(domain))
    }

    /// The value as a `tock-registers` copy, for field-level access.
    #[inline]
    #[must_use]
    pub fn as_register(self) -> LocalRegisterCopy<u32, DACR::Register> {
        LocalRegisterCopy::new(self.0)
    }
}

impl fmt::Debug for Dacr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dacr(")?;
        for d in Domain::all() {
            let c = match self.get(d) {
                DomainAccess::NoAccess => '-',
                DomainAccess::Client => 'c',
                DomainAccess::Reserved => 'r',
                DomainAccess::Manager => 'M',
            };
            write!(f, "{c}")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tock_registers::debug::RegisterDebugInfo;

    const ACCESSES: [DomainAccess; 4] = [
        DomainAccess::NoAccess,
        DomainAccess::Client,
        DomainAccess::Reserved,
        DomainAccess::Manager,
    ];

    proptest! {
        #![proptest_config(crate::testing::proptest_config(256))]
        /// For every domain, the const accessors read and write exactly the
        /// `tock-registers` field of the same number.
        #[test]
        fn accessors_agree_with_tock_fields(bits in any::<u32>(), a in 0..4usize) {
            let v = Dacr::from_bits(bits);
            let access = ACCESSES[a];
            let fields = DACR::Register::fields();
            prop_assert_eq!(fields.len(), Domain::COUNT);
            for (name, f) in DACR::Register::field_names().iter().zip(fields) {
                let n: u8 = name.strip_prefix('D').and_then(|n| n.parse().ok()).unwrap();
                let d = Domain::new(n).unwrap();
                prop_assert_eq!(v.get(d) as u32, v.as_register().read(*f), "{}", name);
                prop_assert_eq!(v.contains(d), v.as_register().is_set(*f), "{}", name);
                prop_assert_eq!(
                    v.with(d, access).bits(),
                    f.val(access as u32).modify(bits),
                    "{}",
                    name
                );
            }
        }
    }

    #[test]
    fn access_codes_agree_with_tock_values() {
        use DACR::D0::Value;
        for (ours, tock) in ACCESSES.into_iter().zip([
            Value::NoAccess,
            Value::Client,
            Value::Reserved,
            Value::Manager,
        ]) {
            assert_eq!(ours as u32, tock as u32);
            assert_eq!(DomainAccess::from_bits(tock as u32), ours);
        }
    }

    #[test]
    fn whole_register_constants() {
        assert_eq!(Dacr::NONE.bits(), 0);
        assert_eq!(Dacr::ALL_CLIENT.bits(), 0x5555_5555);
        assert_eq!(Dacr::ALL_MANAGER.bits(), 0xFFFF_FFFF);
    }

    #[test]
    fn fields_sit_at_two_bits_per_domain() {
        let d5 = Domain::new(5).unwrap();
        let v = Dacr::NONE.with(d5, DomainAccess::Manager);
        assert_eq!(v.bits(), 0b11 << 10);
        assert_eq!(v.get(d5), DomainAccess::Manager);
        assert_eq!(v.as_register().read(DACR::D5), 3);
        let v = v.with(d5, DomainAccess::Client);
        assert_eq!(v.bits(), 0b01 << 10);
        for d in Domain::all() {
            let x = Dacr::only(d, DomainAccess::Reserved);
            assert_eq!(x.bits(), 2 << (2 * d.get()));
            assert_eq!(x.get(d), DomainAccess::Reserved);
        }
    }

    #[test]
    fn masks() {
        let a = Dacr::only(Domain::new(0).unwrap(), DomainAccess::Client);
        let b = Dacr::only(Domain::new(15).unwrap(), DomainAccess::Manager);
        let u = a.union(b);
        assert!(u.contains(Domain::new(15).unwrap()));
        assert!(!u.contains(Domain::new(7).unwrap()));
        assert_eq!(u.difference(b), a);
    }
}
