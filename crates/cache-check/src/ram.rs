//! Physical addresses of instruction fetches, which QEMU 7.2's plugin API
//! does not give.
//!
//! `qemu_plugin_insn_haddr` gives the *host* address of an instruction's
//! bytes; for guest RAM that is QEMU's buffer for the RAM plus the offset
//! into it, so `host - physical` is one constant per board. The plugin
//! learns it from the first translated instruction whose address lies in
//! RAM: every board resets with the MMU off and enters the kernel at its
//! physical load address, so that instruction's virtual address is its
//! physical address.
//!
//! The check that counts is the tracer's (`trace::Stats::fetch_pa_checked`):
//! a PC-relative literal load reads the instruction's own 1 KiB block, and
//! QEMU translates that data address itself, so the fetch's physical
//! address must be the load's minus their distance. Here, for information,
//! fetches from the kernel's linear map are compared with it
//! ([`HostMap::checked`], [`HostMap::mismatches`]): pages the kernel maps
//! elsewhere (the emulated TCM bank over kernel text on versatilepb) differ
//! legitimately.

/// Host-to-physical translation of instruction addresses.
#[derive(Clone, Debug)]
pub struct HostMap {
    ram_base: u32,
    ram_size: u32,
    kernel_base: u32,
    /// `host - physical`, once learnt.
    offset: Option<u64>,
    /// Linear-map fetches whose physical address was checked.
    pub checked: u64,
    /// Checked fetches whose physical address was not the linear map's.
    pub mismatches: u64,
    /// The first few: (virtual, physical found, host address).
    pub first_mismatches: Vec<(u32, u32, u64)>,
}

impl HostMap {
    /// A map for RAM at `ram_base` (`ram_size` bytes), linearly mapped by
    /// the kernel at `kernel_base`.
    pub fn new(ram_base: u32, ram_size: u32, kernel_base: u32) -> HostMap {
        HostMap {
            ram_base,
            ram_size,
            kernel_base,
            offset: None,
            checked: 0,
            mismatches: 0,
            first_mismatches: Vec::new(),
        }
    }

    fn in_ram(&self, pa: u64) -> bool {
        pa.wrapping_sub(u64::from(self.ram_base)) < u64::from(self.ram_size)
    }

    /// The learnt `host - physical` offset.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// The physical address of the instruction at `va` whose bytes QEMU
    /// holds at `host` (`None`: not RAM, or no host address), learning the
    /// offset on the first call whose `va` lies in RAM.
    pub fn translate(&mut self, va: u32, host: Option<u64>) -> Option<u32> {
        let host = host?;
        let off = match self.offset {
            Some(o) => o,
            None if self.in_ram(u64::from(va)) => {
                let o = host.wrapping_sub(u64::from(va));
                self.offset = Some(o);
                o
            }
            None => return None,
        };
        let pa = host.wrapping_sub(off);
        if !self.in_ram(pa) {
            return None;
        }
        let pa = pa as u32;
        let lin = va.wrapping_sub(self.kernel_base);
        if va >= self.kernel_base && lin < self.ram_size {
            self.checked += 1;
            if pa != self.ram_base.wrapping_add(lin) {
                self.mismatches += 1;
                if self.first_mismatches.len() < 8 {
                    self.first_mismatches.push((va, pa, host));
                }
            }
        }
        Some(pa)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_from_the_first_ram_fetch_and_checks_the_linear_map() {
        // versatilepb: RAM at 0, QEMU's buffer at host 0x7f00_0000_0000.
        let host = 0x7F00_0000_0000u64;
        let mut m = HostMap::new(0, 128 << 20, 0xC000_0000);
        assert_eq!(m.translate(0x0010_0000, None), None);
        assert_eq!(
            m.translate(0x0010_0000, Some(host + 0x10_0000)),
            Some(0x0010_0000)
        );
        assert_eq!(m.offset(), Some(host));
        // The same code at its high address: checked, agrees.
        assert_eq!(
            m.translate(0xC010_0004, Some(host + 0x10_0004)),
            Some(0x0010_0004)
        );
        // A user page (not checked), then a host address outside RAM.
        assert_eq!(
            m.translate(0x8000, Some(host + 0x0200_0000)),
            Some(0x0200_0000)
        );
        assert_eq!(m.translate(0x8000, Some(host - 4)), None);
        assert_eq!((m.checked, m.mismatches), (1, 0));
        // A wrong offset is caught on the linear map.
        assert_eq!(m.translate(0xC000_1000, Some(host + 0x2000)), Some(0x2000));
        assert_eq!((m.checked, m.mismatches), (2, 1));
    }

    #[test]
    fn fetches_outside_ram_before_learning_are_unknown() {
        // collie: flash at 0, RAM at 0xC000_0000.
        let mut m = HostMap::new(0xC000_0000, 128 << 20, 0xC000_0000);
        assert_eq!(m.translate(0x0, Some(0x5000_0000)), None);
        assert_eq!(m.offset(), None);
        assert_eq!(
            m.translate(0xC010_0000, Some(0x9000_0000)),
            Some(0xC010_0000)
        );
        assert_eq!((m.checked, m.mismatches), (1, 0));
    }
}
