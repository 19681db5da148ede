//! A small ELF32 reader for the user image: the entry and the `PT_LOAD`
//! segments, every field checked against the file and the user window.

/// Why an image cannot be loaded.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum ElfError {
    /// Shorter than its headers say.
    Truncated,
    /// Not `\x7fELF`, not 32-bit little-endian, not ARM, or not executable.
    NotArmExecutable,
    /// A program header of an unexpected size.
    BadPhentsize(u16),
    /// A segment whose file bytes exceed its memory size or the file.
    BadSegment(u32),
    /// A segment outside the low user window `[0x1000, 0x0010_0000)`.
    OutsideWindow(u32),
    /// No loadable segment.
    NoSegments,
}

/// One loadable segment.
#[derive(Clone, Copy, defmt::Format)]
pub struct Segment {
    /// Virtual address.
    pub vaddr: u32,
    /// Bytes in memory (the rest past `filesz` is zero).
    pub memsz: u32,
    /// Offset of its bytes in the file.
    pub offset: u32,
    /// Bytes in the file.
    pub filesz: u32,
    /// Writable (`PF_W`).
    pub writable: bool,
}

/// Lowest address a segment may use.
pub const WINDOW_LOW: u32 = 0x1000;
/// One past the highest address a segment may use.
pub const WINDOW_HIGH: u32 = 0x0010_0000;
/// Most segments read.
pub const MAX_SEGMENTS: usize = 4;

/// A parsed image.
pub struct Image<'a> {
    /// The file.
    pub bytes: &'a [u8],
    /// Entry point.
    pub entry: u32,
    /// Loadable segments.
    pub segments: [Option<Segment>; MAX_SEGMENTS],
}

fn u16_at(b: &[u8], off: usize) -> Result<u16, ElfError> {
    let s = b.get(off..off + 2).ok_or(ElfError::Truncated)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], off: usize) -> Result<u32, ElfError> {
    let s = b.get(off..off + 4).ok_or(ElfError::Truncated)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Parses `bytes`.
pub fn parse(bytes: &[u8]) -> Result<Image<'_>, ElfError> {
    let ident = bytes.get(..16).ok_or(ElfError::Truncated)?;
    // Magic, ELFCLASS32, ELFDATA2LSB; e_type EXEC; e_machine ARM.
    if ident[..4] != *b"\x7fELF"
        || ident[4] != 1
        || ident[5] != 1
        || u16_at(bytes, 16)? != 2
        || u16_at(bytes, 18)? != 40
    {
        return Err(ElfError::NotArmExecutable);
    }
    let entry = u32_at(bytes, 24)?;
    let phoff = u32_at(bytes, 28)? as usize;
    let phentsize = u16_at(bytes, 42)?;
    let phnum = u16_at(bytes, 44)? as usize;
    if phentsize != 32 {
        return Err(ElfError::BadPhentsize(phentsize));
    }
    let mut segments = [None; MAX_SEGMENTS];
    let mut n = 0;
    for i in 0..phnum {
        let ph = phoff.checked_add(i * 32).ok_or(ElfError::Truncated)?;
        if u32_at(bytes, ph)? != 1 {
            continue; // not PT_LOAD
        }
        let seg = Segment {
            offset: u32_at(bytes, ph + 4)?,
            vaddr: u32_at(bytes, ph + 8)?,
            filesz: u32_at(bytes, ph + 16)?,
            memsz: u32_at(bytes, ph + 20)?,
            writable: u32_at(bytes, ph + 24)? & 2 != 0,
        };
        let file_end = seg.offset.checked_add(seg.filesz);
        if seg.filesz > seg.memsz || file_end.is_none_or(|e| e as usize > bytes.len()) {
            return Err(ElfError::BadSegment(seg.vaddr));
        }
        let end = seg.vaddr.checked_add(seg.memsz);
        if seg.vaddr < WINDOW_LOW || end.is_none_or(|e| e > WINDOW_HIGH) {
            return Err(ElfError::OutsideWindow(seg.vaddr));
        }
        if seg.memsz == 0 {
            continue;
        }
        *segments.get_mut(n).ok_or(ElfError::BadSegment(seg.vaddr))? = Some(seg);
        n += 1;
    }
    if n == 0 {
        return Err(ElfError::NoSegments);
    }
    if !(WINDOW_LOW..WINDOW_HIGH).contains(&entry) {
        return Err(ElfError::OutsideWindow(entry));
    }
    Ok(Image {
        bytes,
        entry,
        segments,
    })
}
