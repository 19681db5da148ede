//! Raw descriptor words, bit for bit from the ARM Architecture Reference
//! Manual (ARMv5), for tests that build tables without the `mmu-armv5` mapper.
//!
//! Every function masks its inputs to their fields; no check is made that
//! addresses are aligned (the low bits are simply dropped, as hardware does).

/// First-level section descriptor: `base[31:20] | AP[11:10] | domain[8:5] | C[3] | B[2] | 0b10`.
#[must_use]
pub const fn section(pa: u32, ap: u8, domain: u8, c: bool, b: bool) -> u32 {
    (pa & 0xFFF0_0000)
        | ((ap as u32 & 3) << 10)
        | ((domain as u32 & 15) << 5)
        | ((c as u32) << 3)
        | ((b as u32) << 2)
        | 0b10
}

/// First-level coarse-table descriptor: `base[31:10] | domain[8:5] | 0b01`.
#[must_use]
pub const fn coarse(table_pa: u32, domain: u8) -> u32 {
    (table_pa & 0xFFFF_FC00) | ((domain as u32 & 15) << 5) | 0b01
}

/// First-level fine-table descriptor: `base[31:12] | domain[8:5] | 0b11`.
#[must_use]
pub const fn fine(table_pa: u32, domain: u8) -> u32 {
    (table_pa & 0xFFFF_F000) | ((domain as u32 & 15) << 5) | 0b11
}

const fn aps(ap: [u8; 4]) -> u32 {
    ((ap[0] as u32 & 3) << 4)
        | ((ap[1] as u32 & 3) << 6)
        | ((ap[2] as u32 & 3) << 8)
        | ((ap[3] as u32 & 3) << 10)
}

/// Second-level large-page descriptor: `base[31:16] | AP3..AP0[11:4] | C | B | 0b01`.
#[must_use]
pub const fn large(pa: u32, ap: [u8; 4], c: bool, b: bool) -> u32 {
    (pa & 0xFFFF_0000) | aps(ap) | ((c as u32) << 3) | ((b as u32) << 2) | 0b01
}

/// Second-level small-page descriptor: `base[31:12] | AP3..AP0[11:4] | C | B | 0b10`.
#[must_use]
pub const fn small(pa: u32, ap: [u8; 4], c: bool, b: bool) -> u32 {
    (pa & 0xFFFF_F000) | aps(ap) | ((c as u32) << 3) | ((b as u32) << 2) | 0b10
}

/// Second-level tiny-page descriptor (fine tables only): `base[31:10] | AP[5:4] | C | B | 0b11`.
#[must_use]
pub const fn tiny(pa: u32, ap: u8, c: bool, b: bool) -> u32 {
    (pa & 0xFFFF_FC00) | ((ap as u32 & 3) << 4) | ((c as u32) << 3) | ((b as u32) << 2) | 0b11
}

/// Physical address of the first-level entry for `mva` in the table at `ttb`.
#[must_use]
pub const fn l1_entry_addr(ttb: u32, mva: u32) -> u32 {
    (ttb & 0xFFFF_C000) | ((mva >> 20) << 2)
}

/// Physical address of the coarse-table entry for `mva` in the table at `table`.
#[must_use]
pub const fn coarse_entry_addr(table: u32, mva: u32) -> u32 {
    (table & 0xFFFF_FC00) | (((mva >> 12) & 0xFF) << 2)
}

/// Physical address of the fine-table entry for `mva` in the table at `table`.
#[must_use]
pub const fn fine_entry_addr(table: u32, mva: u32) -> u32 {
    (table & 0xFFFF_F000) | (((mva >> 10) & 0x3FF) << 2)
}
