//! The kernel command line, read through semihosting `SYS_GET_CMDLINE`.
//!
//! QEMU builds it from `-kernel` and `-append` ("<kernel path> <append>")
//! when no `-semihosting-config arg=` is given. Words are separated by
//! spaces; the kernel path and unknown words are ignored. `scenario=NAMES`
//! selects the process scenarios ([`crate::proc::scenario`]), with
//! `mode=`, `n=`, `touch=`, `passes=`, `rounds=`, `seed=`, `calls=`, `slice=`.
//! `omit=NAME` (a `cache-check` build only) leaves one maintenance
//! operation out on purpose ([`crate::marker::Omit`]).

use crate::exit::semihosting;
use crate::global::Global;

/// `SYS_GET_CMDLINE`.
const SYS_GET_CMDLINE: u32 = 0x15;
/// Size of the command-line buffer.
const BUF_LEN: usize = 512;

/// What the kernel should do.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum Mode {
    /// Print the boot information and run the demo.
    Demo,
    /// Run the in-kernel tests.
    Test,
    /// Run user-process scenarios.
    Scenario,
}

/// The parsed command line.
pub struct Cmdline {
    /// Demo or tests.
    pub mode: Mode,
    /// `only=NAME`: run just this test.
    pub only: Option<&'static str>,
    /// `seed=N` as written (tests: the differential test's seed, decimal or
    /// `0x` hex; scenarios: the fuzzer's, in [`Cmdline::params`]).
    pub seed: Option<&'static str>,
    /// Scenario parameters.
    pub params: crate::proc::scenario::Params,
    /// `omit=NAME`: the maintenance operation to leave out
    /// ([`crate::marker::Omit`]; only a `cache-check` build accepts it).
    pub omit: Option<&'static str>,
}

/// Why the command line could not be read.
#[derive(Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum CmdlineError {
    /// The semihosting call failed (command line longer than the buffer?).
    Semihosting,
    /// The command line is not UTF-8.
    NotUtf8,
}

static BUF: Global<[u8; BUF_LEN]> = Global::new([0; BUF_LEN]);

/// Reads and parses the command line. Call once.
pub fn read() -> Result<Cmdline, CmdlineError> {
    let buf = BUF.as_ptr();
    let mut block: [u32; 2] = [buf as u32, BUF_LEN as u32];
    // SAFETY: the parameter block names a writable buffer of BUF_LEN bytes;
    // QEMU writes at most that many and updates block[1] with the length.
    let r = unsafe { semihosting(SYS_GET_CMDLINE, block.as_mut_ptr() as u32) };
    if r != 0 {
        return Err(CmdlineError::Semihosting);
    }
    let len = (block[1] as usize).min(BUF_LEN);
    // SAFETY: the buffer is not written again; `len` is within it.
    let bytes: &'static [u8] = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
    let text = core::str::from_utf8(bytes).map_err(|_| CmdlineError::NotUtf8)?;
    defmt::info!("command line: {=str}", text);
    Ok(parse(text))
}

/// A 64-bit number written in decimal or as `0x` hex; `None` otherwise.
pub fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses the words of a command line.
fn parse(text: &'static str) -> Cmdline {
    let mut cmd = Cmdline {
        mode: Mode::Demo,
        only: None,
        seed: None,
        params: crate::proc::scenario::Params::DEFAULT,
        omit: None,
    };
    let p = &mut cmd.params;
    for word in text.split(' ') {
        let number = |v: &str, old: u32| v.parse::<u32>().unwrap_or(old);
        match word.split_once('=') {
            None if word == "test" => cmd.mode = Mode::Test,
            None if word == "demo" => cmd.mode = Mode::Demo,
            Some(("only", name)) => cmd.only = Some(name),
            Some(("omit", name)) => cmd.omit = Some(name),
            Some(("scenario", names)) => {
                cmd.mode = Mode::Scenario;
                p.scenarios = names;
            }
            Some(("mode", v)) => p.modes = v,
            Some(("n", v)) => p.ns = v,
            Some(("touch", v)) => p.touch = number(v, p.touch),
            Some(("passes", v)) => p.passes = number(v, p.passes),
            Some(("rounds", v)) => p.rounds = number(v, p.rounds),
            Some(("seed", v)) => {
                p.seed = number(v, p.seed);
                cmd.seed = Some(v);
            }
            Some(("calls", v)) => p.calls = number(v, p.calls),
            Some(("slice", v)) => p.slice = number(v, p.slice),
            _ => {}
        }
    }
    cmd
}
