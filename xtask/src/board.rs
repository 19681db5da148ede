//! The QEMU boards the demo kernel runs on, and what each needs: the Rust
//! target and `RUSTFLAGS` of its CPU, the kernel's cargo feature, and how
//! QEMU loads the ELF and passes the command line.

use std::path::{Path, PathBuf};

use crate::cargo::{ARMV4T, ARMV5TE, STRONGARM_RUSTFLAGS};
use crate::{Error, Result};

/// A board of `qemu-system-arm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Board {
    /// `-M versatilepb -cpu arm926` (ARM926EJ-S; RAM at 0; `-kernel`, `-append`).
    #[default]
    Versatilepb,
    /// `-M collie` (StrongARM SA-1110; RAM at 0xC000_0000; `-kernel`, `-append`).
    Collie,
    /// `-M connex` (XScale PXA255; RAM at 0xA000_0000): `-kernel` is ignored,
    /// the ELF comes through `-device loader` over an empty 16 MiB pflash and
    /// the command line through `-semihosting-config arg=`.
    Connex,
}

/// Size of connex's flash image (QEMU wants exactly the board's 16 MiB).
pub const CONNEX_FLASH_BYTES: u64 = 16 << 20;

impl Board {
    /// Every board, versatilepb first.
    pub const ALL: [Board; 3] = [Board::Versatilepb, Board::Collie, Board::Connex];

    /// The name `--board` takes (and QEMU's `-M`).
    pub fn name(self) -> &'static str {
        match self {
            Board::Versatilepb => "versatilepb",
            Board::Collie => "collie",
            Board::Connex => "connex",
        }
    }

    /// The board named `s`.
    pub fn parse(s: &str) -> Result<Board> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--board wants versatilepb, collie or connex, got `{s}`"
                ))
            })
    }

    /// The Rust target of the board's CPU (kernel and user program alike).
    pub fn target(self) -> &'static str {
        match self {
            Board::Versatilepb | Board::Connex => ARMV5TE,
            Board::Collie => ARMV4T,
        }
    }

    /// `RUSTFLAGS` the CPU needs (the SA-1110 has no `BX`).
    pub fn rustflags(self) -> Option<&'static str> {
        match self {
            Board::Collie => Some(STRONGARM_RUSTFLAGS),
            Board::Versatilepb | Board::Connex => None,
        }
    }

    /// Whether the kernel has TCM to exchange pages into on this board
    /// (the kernel's `board::HAS_TCM`): versatilepb's ARM926EJ-S (QEMU's
    /// has none, so an emulated bank in RAM stands in for it); the SA-1110
    /// and the PXA255 have no TCM, and their kernels run no TCM scenario.
    pub fn has_tcm(self) -> bool {
        match self {
            Board::Versatilepb => true,
            Board::Collie | Board::Connex => false,
        }
    }

    /// Whether the board's CPU has a VFP for user processes (the kernel's
    /// `board::HAS_VFP`, which its FPSID probe confirms): versatilepb's
    /// ARM926EJ-S with QEMU's VFP9-S; the SA-1110 and the PXA255 have none,
    /// and their kernels run no VFP scenario.
    pub fn has_vfp(self) -> bool {
        match self {
            Board::Versatilepb => true,
            Board::Collie | Board::Connex => false,
        }
    }

    /// The kernel's cargo feature selecting the board.
    pub fn feature(self) -> String {
        format!("board-{}", self.name())
    }

    /// Where connex's empty flash image lives for `elf` (next to it, in the
    /// target directory).
    pub fn flash_image(elf: &Path) -> PathBuf {
        elf.with_file_name("connex-flash.img")
    }

    /// Makes connex's empty flash image for `elf` if it is missing or of the
    /// wrong size (nothing for the other boards).
    pub fn prepare(self, elf: &Path) -> Result<()> {
        if self != Board::Connex {
            return Ok(());
        }
        let path = Board::flash_image(elf);
        let ok = std::fs::metadata(&path).is_ok_and(|m| m.len() == CONNEX_FLASH_BYTES);
        if ok {
            return Ok(());
        }
        let io = |source| Error::Io {
            what: format!("making the flash image {}", path.display()),
            source,
        };
        let f = std::fs::File::create(&path).map_err(io)?;
        f.set_len(CONNEX_FLASH_BYTES).map_err(io)
    }

    /// QEMU's arguments for this board: the machine, how the ELF is loaded
    /// and how the command line `append` reaches `SYS_GET_CMDLINE`.
    pub fn qemu_args(self, elf: &Path, append: Option<&str>) -> Vec<String> {
        let elf_s = elf.display().to_string();
        let mut a: Vec<String> = match self {
            Board::Versatilepb => vec!["-M", "versatilepb", "-cpu", "arm926", "-m", "128M"],
            Board::Collie => vec!["-M", "collie"],
            Board::Connex => vec!["-M", "connex"],
        }
        .into_iter()
        .map(String::from)
        .collect();
        a.extend(
            ["-display", "none", "-serial", "stdio", "-monitor", "none"]
                .iter()
                .map(|s| s.to_string()),
        );
        match self {
            Board::Versatilepb | Board::Collie => {
                a.push("-semihosting-config".into());
                a.push("enable=on,target=native".into());
                a.push("-kernel".into());
                a.push(elf_s);
                if let Some(cmdline) = append {
                    a.push("-append".into());
                    a.push(cmdline.to_string());
                }
            }
            Board::Connex => {
                // Without -kernel QEMU refuses -append: the words go as
                // semihosting arguments (joined by spaces, the ELF first as
                // -kernel would give it; commas doubled for QEMU's option parser).
                let mut sh = String::from("enable=on,target=native");
                for w in
                    std::iter::once(elf_s.as_str()).chain(append.unwrap_or("").split_whitespace())
                {
                    sh.push_str(",arg=");
                    sh.push_str(&w.replace(',', ",,"));
                }
                a.push("-semihosting-config".into());
                a.push(sh);
                a.push("-drive".into());
                a.push(format!(
                    "file={},if=pflash,format=raw,readonly=on",
                    Board::flash_image(elf).display()
                ));
                a.push("-device".into());
                a.push(format!("loader,file={elf_s},cpu-num=0"));
            }
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_is_an_error() {
        for b in Board::ALL {
            assert_eq!(Board::parse(b.name()).unwrap(), b);
        }
        assert!(Board::parse("realview").is_err());
        assert_eq!(Board::default(), Board::Versatilepb);
    }

    #[test]
    fn strongarm_gets_armv4t_and_its_flags() {
        assert_eq!(Board::Collie.target(), ARMV4T);
        assert_eq!(Board::Collie.rustflags(), Some(STRONGARM_RUSTFLAGS));
        for b in [Board::Versatilepb, Board::Connex] {
            assert_eq!(b.target(), ARMV5TE);
            assert_eq!(b.rustflags(), None);
        }
        assert_eq!(Board::Connex.feature(), "board-connex");
    }

    #[test]
    fn collie_loads_with_kernel_and_append() {
        let a = Board::Collie.qemu_args(Path::new("/t/k.elf"), Some("test only=x"));
        assert_eq!(
            a.join(" "),
            "-M collie -display none -serial stdio -monitor none \
             -semihosting-config enable=on,target=native -kernel /t/k.elf -append test only=x"
        );
    }

    #[test]
    fn connex_loads_through_the_loader_over_an_empty_flash() {
        let a = Board::Connex.qemu_args(Path::new("/t/k.elf"), Some("scenario=ring,ipc n=2"));
        assert_eq!(
            a,
            [
                "-M",
                "connex",
                "-display",
                "none",
                "-serial",
                "stdio",
                "-monitor",
                "none",
                "-semihosting-config",
                "enable=on,target=native,arg=/t/k.elf,arg=scenario=ring,,ipc,arg=n=2",
                "-drive",
                "file=/t/connex-flash.img,if=pflash,format=raw,readonly=on",
                "-device",
                "loader,file=/t/k.elf,cpu-num=0",
            ]
        );
        assert!(!a.iter().any(|s| s == "-kernel" || s == "-append"));
    }

    #[test]
    fn connex_flash_image_is_made_at_16_mib() {
        let dir = std::env::temp_dir().join(format!("xtask-board-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let elf = dir.join("k.elf");
        Board::Connex.prepare(&elf).unwrap();
        let img = Board::flash_image(&elf);
        assert_eq!(std::fs::metadata(&img).unwrap().len(), CONNEX_FLASH_BYTES);
        std::fs::remove_file(&img).unwrap();
        Board::Collie.prepare(&elf).unwrap();
        assert!(!img.exists(), "only connex needs a flash image");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
