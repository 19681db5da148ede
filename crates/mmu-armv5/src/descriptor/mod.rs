//! First- and second-level translation descriptors.
//!
//! Bit layouts are those of the ARM Architecture Reference Manual (ARMv5,
//! "Virtual Memory System Architecture"):
//!
//! | first level | bits |
//! |---|---|
//! | fault | `[1:0] = 00`, the rest ignored by hardware |
//! | coarse table | base `[31:10]`, P `[9]`, domain `[8:5]`, `1` at `[4]`, `[1:0] = 01` |
//! | section | base `[31:20]`, XScale TEX `[14:12]`, AP `[11:10]`, P `[9]`, domain `[8:5]`, `1` at `[4]`, C `[3]`, B `[2]`, `[1:0] = 10` |
//! | fine table | base `[31:12]`, domain `[8:5]`, `1` at `[4]`, `[1:0] = 11` |
//!
//! | second level | bits |
//! |---|---|
//! | fault | `[1:0] = 00` |
//! | large page (64 KiB) | base `[31:16]`, XScale TEX `[14:12]`, AP3..AP0 `[11:4]`, C, B, `[1:0] = 01` |
//! | small page (4 KiB) | base `[31:12]`, AP3..AP0 `[11:4]`, C, B, `[1:0] = 10` |
//! | tiny page (1 KiB, fine tables only) | base `[31:10]`, XScale TEX `[8:6]`, AP `[5:4]`, C, B, `[1:0] = 11` |
//!
//! Encoding then decoding gives back the same descriptor; decoding then
//! encoding gives back the word with its should-be-zero bits cleared.

mod attr;
mod l1;
mod l2;

pub use attr::{AccessPermission, CachePolicy, DescriptorError, ProtectionBits, SubpageAp, Tex};
pub use l1::{CoarseTableDesc, FineTableDesc, L1Descriptor, L1Encoding, SectionDesc};
pub use l2::{L2Descriptor, LargePageDesc, SmallPageDesc, TinyPageDesc};
