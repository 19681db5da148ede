//! The `BENCH` line the demo kernel prints, and its parser:
//!
//! ```text
//! BENCH kind=K mode=M n=N touch=T value=V unit=instructions [min=A max=B]
//! ```
//!
//! Only the kernel's measuring build (feature `measure`) prints it. `value`
//! is a mean rounded to the nearest instruction; `min` and `max` (both or
//! neither) are the shortest and longest single transit where the figure
//! is one transit's (yield, one-way IPC, preemption, the switch tail).
//!
//! What each kind measures and which scenario prints it is the contract in
//! [`super::contract`].

/// What a `BENCH` line measured. The order is the order of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A yield switch: process A calls yield, process B runs.
    Yield,
    /// One-way IPC: A sends (or calls) to B blocked in receive; B runs with
    /// the message.
    IpcOneway,
    /// IPC round trip: call + reply, A to B to A, both transits summed.
    IpcRoundtrip,
    /// A timer preemption switch: timer IRQ in A, B runs.
    Preempt,
    /// Every kernel instruction of a token-ring pass divided by the
    /// switches (lmbench `lat_ctx` shape), recycling included.
    Ring,
    /// One domain-fault (collision) resolution without a cache flush.
    Fault,
    /// One domain-fault (collision) resolution with a full cache flush.
    FaultFlush,
    /// Secondary: the tail of a switch, from the scheduler's decision to
    /// the return to user mode (the kernel's old `kind=switch`).
    SwitchTail,
    /// One 4 KiB TCM exchange.
    Tcm,
    /// The TCM exchange's longest interrupts-off window.
    TcmWindow,
    /// Legacy: the old kernel's `kind=ipc`, every instruction (user code
    /// included) between the scenario's marks per round trip. Not
    /// `ipc_roundtrip`; kept so the old kernel's log still parses.
    IpcLegacy,
    /// Long IPC: A sends a buffer to B blocked in a long receive, B runs
    /// with the bytes in its buffer (the copy included).
    LongIpc,
    /// The plain copy of the same size inside one space (user code).
    LongCopy,
    /// Yield between two processes that do not use the VFP, lazy VFP
    /// switching: every kernel instruction per yield.
    YieldVfp0Lazy,
    /// The same, eager VFP switching.
    YieldVfp0Eager,
    /// Yield between two processes of which one computes with the VFP,
    /// lazy: every kernel instruction (yields and VFP traps) per yield.
    YieldVfp1Lazy,
    /// The same, eager.
    YieldVfp1Eager,
    /// Yield between two processes that both compute with the VFP, lazy.
    YieldVfp2Lazy,
    /// The same, eager.
    YieldVfp2Eager,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 19] = [
        Kind::Yield,
        Kind::IpcOneway,
        Kind::IpcRoundtrip,
        Kind::Preempt,
        Kind::Ring,
        Kind::Fault,
        Kind::FaultFlush,
        Kind::SwitchTail,
        Kind::Tcm,
        Kind::TcmWindow,
        Kind::IpcLegacy,
        Kind::LongIpc,
        Kind::LongCopy,
        Kind::YieldVfp0Lazy,
        Kind::YieldVfp0Eager,
        Kind::YieldVfp1Lazy,
        Kind::YieldVfp1Eager,
        Kind::YieldVfp2Lazy,
        Kind::YieldVfp2Eager,
    ];

    /// Reads the word of the line; `switch` (the old name of `switch_tail`)
    /// is read as [`Kind::SwitchTail`].
    pub fn parse(s: &str) -> Option<Kind> {
        if s == "switch" {
            return Some(Kind::SwitchTail);
        }
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The word used in the line and in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Yield => "yield",
            Kind::IpcOneway => "ipc_oneway",
            Kind::IpcRoundtrip => "ipc_roundtrip",
            Kind::Preempt => "preempt",
            Kind::Ring => "ring",
            Kind::Fault => "fault",
            Kind::FaultFlush => "fault_flush",
            Kind::SwitchTail => "switch_tail",
            Kind::Tcm => "tcm",
            Kind::TcmWindow => "tcm_window",
            Kind::IpcLegacy => "ipc",
            Kind::LongIpc => "long_ipc",
            Kind::LongCopy => "long_copy",
            Kind::YieldVfp0Lazy => "yield_vfp0_lazy",
            Kind::YieldVfp0Eager => "yield_vfp0_eager",
            Kind::YieldVfp1Lazy => "yield_vfp1_lazy",
            Kind::YieldVfp1Eager => "yield_vfp1_eager",
            Kind::YieldVfp2Lazy => "yield_vfp2_lazy",
            Kind::YieldVfp2Eager => "yield_vfp2_eager",
        }
    }

    /// Whether the kind measures an exchange into TCM: a board without
    /// TCM ([`crate::board::Board::has_tcm`]) cannot print it.
    pub fn needs_tcm(self) -> bool {
        matches!(self, Kind::Tcm | Kind::TcmWindow)
    }

    /// Whether the kind measures VFP switching: a board without a VFP
    /// ([`crate::board::Board::has_vfp`]) cannot print it.
    pub fn needs_vfp(self) -> bool {
        matches!(
            self,
            Kind::YieldVfp0Lazy
                | Kind::YieldVfp0Eager
                | Kind::YieldVfp1Lazy
                | Kind::YieldVfp1Eager
                | Kind::YieldVfp2Lazy
                | Kind::YieldVfp2Eager
        )
    }
}

/// A switching mode of the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Full flush per switch.
    Naive,
    /// FCSE PIDs and per-process tables.
    Fcse,
    /// Fast address-space switching.
    Fass,
}

impl Mode {
    /// The three modes, in table order.
    pub const ALL: [Mode; 3] = [Mode::Naive, Mode::Fcse, Mode::Fass];

    /// Reads the word of the line.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// The word used on the command line, in the line and in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Naive => "naive",
            Mode::Fcse => "fcse",
            Mode::Fass => "fass",
        }
    }
}

/// One parsed `BENCH` line.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchLine {
    /// What was measured.
    pub kind: Kind,
    /// In which mode.
    pub mode: Mode,
    /// Processes (see the contract for what `n` counts per scenario).
    pub n: u32,
    /// Bytes touched per process and turn.
    pub touch: u32,
    /// The count (instructions).
    pub value: f64,
    /// The shortest and longest single transit, where the kernel gives them.
    pub range: Option<(f64, f64)>,
}

/// Why a line that starts with `BENCH` was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// A field is missing.
    Missing(&'static str),
    /// A field has a value that cannot be read.
    Bad(&'static str, String),
    /// A token is not `key=value` or the key is unknown.
    Unexpected(String),
}

/// Parses one log line. `Ok(None)`: not a `BENCH` line.
pub fn parse_line(text: &str) -> Result<Option<BenchLine>, ParseError> {
    let Some(rest) = text.trim().strip_prefix("BENCH ") else {
        return Ok(None);
    };
    let (mut kind, mut mode, mut n, mut touch, mut value, mut unit) =
        (None, None, None, None, None, None);
    let (mut min, mut max) = (None, None);
    for tok in rest.split_whitespace() {
        let (k, v) = tok
            .split_once('=')
            .ok_or_else(|| ParseError::Unexpected(tok.to_string()))?;
        let bad = |f: &'static str| ParseError::Bad(f, v.to_string());
        match k {
            "kind" => kind = Some(Kind::parse(v).ok_or_else(|| bad("kind"))?),
            "mode" => mode = Some(Mode::parse(v).ok_or_else(|| bad("mode"))?),
            "n" => n = Some(v.parse::<u32>().map_err(|_| bad("n"))?),
            "touch" => touch = Some(v.parse::<u32>().map_err(|_| bad("touch"))?),
            "value" => value = Some(parse_value(v).ok_or_else(|| bad("value"))?),
            "min" => min = Some(parse_value(v).ok_or_else(|| bad("min"))?),
            "max" => max = Some(parse_value(v).ok_or_else(|| bad("max"))?),
            "unit" => {
                if v != "instructions" {
                    return Err(bad("unit"));
                }
                unit = Some(());
            }
            _ => return Err(ParseError::Unexpected(tok.to_string())),
        }
    }
    unit.ok_or(ParseError::Missing("unit"))?;
    let value = value.ok_or(ParseError::Missing("value"))?;
    let range = match (min, max) {
        (None, None) => None,
        (Some(lo), Some(hi)) if lo <= value && value <= hi => Some((lo, hi)),
        (Some(lo), Some(hi)) => {
            return Err(ParseError::Bad(
                "min/max",
                format!("min={lo} value={value} max={hi}"),
            ))
        }
        (None, Some(_)) => return Err(ParseError::Missing("min")),
        (Some(_), None) => return Err(ParseError::Missing("max")),
    };
    Ok(Some(BenchLine {
        kind: kind.ok_or(ParseError::Missing("kind"))?,
        mode: mode.ok_or(ParseError::Missing("mode"))?,
        n: n.ok_or(ParseError::Missing("n"))?,
        touch: touch.ok_or(ParseError::Missing("touch"))?,
        value,
        range,
    }))
}

/// A count: finite and not negative.
pub fn parse_value(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
}

/// Every `BENCH` line of a log; malformed ones are errors.
pub fn parse_log<'a>(
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<BenchLine>, ParseError> {
    let mut v = Vec::new();
    for l in lines {
        if let Some(b) = parse_line(l)? {
            v.push(b);
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_form() {
        let l = parse_line(
            "BENCH kind=ipc_oneway mode=fass n=16 touch=4096 value=37 unit=instructions",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            l,
            BenchLine {
                kind: Kind::IpcOneway,
                mode: Mode::Fass,
                n: 16,
                touch: 4096,
                value: 37.0,
                range: None,
            }
        );
        let r = parse_line(
            "BENCH kind=yield mode=fass n=2 touch=0 value=77 unit=instructions min=75 max=79",
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.range, Some((75.0, 79.0)));
    }

    #[test]
    fn a_range_comes_whole_and_around_the_value() {
        let base = "BENCH kind=yield mode=fass n=2 touch=0 value=77 unit=instructions";
        assert_eq!(
            parse_line(&format!("{base} min=75")),
            Err(ParseError::Missing("max"))
        );
        assert_eq!(
            parse_line(&format!("{base} max=79")),
            Err(ParseError::Missing("min"))
        );
        assert!(matches!(
            parse_line(&format!("{base} min=78 max=79")),
            Err(ParseError::Bad("min/max", _))
        ));
        assert!(matches!(
            parse_line(&format!("{base} min=x max=79")),
            Err(ParseError::Bad("min", _))
        ));
        let w = parse_line(
            "  BENCH kind=tcm_window mode=naive n=1 touch=0 value=212.5 unit=instructions",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (w.kind, w.mode, w.value),
            (Kind::TcmWindow, Mode::Naive, 212.5)
        );
    }

    #[test]
    fn every_kind_and_mode_reads_back_its_own_name() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
            let l = format!(
                "BENCH kind={} mode=fcse n=2 touch=0 value=1 unit=instructions",
                k.name()
            );
            assert_eq!(parse_line(&l).unwrap().unwrap().kind, k);
        }
        for m in Mode::ALL {
            assert_eq!(Mode::parse(m.name()), Some(m));
        }
        assert_eq!(Kind::ALL.len(), 19);
    }

    #[test]
    fn the_old_switch_kind_is_the_switch_tail() {
        let l = parse_line("BENCH kind=switch mode=fass n=2 touch=0 value=38 unit=instructions")
            .unwrap()
            .unwrap();
        assert_eq!(l.kind, Kind::SwitchTail);
        assert_eq!(l.kind.name(), "switch_tail");
        let old = parse_line("BENCH kind=ipc mode=fass n=2 touch=0 value=1705 unit=instructions")
            .unwrap()
            .unwrap();
        assert_eq!(old.kind, Kind::IpcLegacy);
        assert_ne!(old.kind, Kind::IpcRoundtrip);
    }

    #[test]
    fn other_lines_are_not_bench_lines() {
        for l in [
            "",
            "kernel tests: 3 passed, 0 failed",
            "BENCHMARK x=1",
            "xBENCH kind=ipc",
        ] {
            assert_eq!(parse_line(l), Ok(None), "{l}");
        }
    }

    #[test]
    fn malformed_bench_lines_are_errors() {
        let bad = [
            (
                "BENCH kind=yield mode=fass n=16 touch=0 value=37",
                ParseError::Missing("unit"),
            ),
            (
                "BENCH kind=yield mode=fass n=16 touch=0 value=37 unit=cycles",
                ParseError::Bad("unit", "cycles".into()),
            ),
            (
                "BENCH kind=warp mode=fass n=16 touch=0 value=37 unit=instructions",
                ParseError::Bad("kind", "warp".into()),
            ),
            (
                "BENCH kind=yield mode=asid n=16 touch=0 value=37 unit=instructions",
                ParseError::Bad("mode", "asid".into()),
            ),
            (
                "BENCH kind=yield mode=fass n=x touch=0 value=37 unit=instructions",
                ParseError::Bad("n", "x".into()),
            ),
            (
                "BENCH kind=yield mode=fass n=1 touch=0 value=-3 unit=instructions",
                ParseError::Bad("value", "-3".into()),
            ),
            (
                "BENCH kind=yield mode=fass n=1 touch=0 value=inf unit=instructions",
                ParseError::Bad("value", "inf".into()),
            ),
            (
                "BENCH kind=yield mode=fass touch=0 value=3 unit=instructions",
                ParseError::Missing("n"),
            ),
            (
                "BENCH kind=yield mode=fass n=1 touch=0 value=3 unit=instructions extra",
                ParseError::Unexpected("extra".into()),
            ),
            (
                "BENCH kind=yield mode=fass n=1 touch=0 value=3 unit=instructions color=red",
                ParseError::Unexpected("color=red".into()),
            ),
            (
                "BENCH kind=ipconeway mode=fass n=1 touch=0 value=3 unit=instructions",
                ParseError::Bad("kind", "ipconeway".into()),
            ),
        ];
        for (l, e) in &bad {
            assert_eq!(parse_line(l), Err(e.clone()), "{l}");
        }
        assert!(parse_log(["x", bad[0].0]).is_err());
        assert_eq!(
            parse_log([
                "boot",
                "BENCH kind=ipc_roundtrip mode=fcse n=4 touch=0 value=120 unit=instructions"
            ])
            .unwrap()
            .len(),
            1
        );
    }
}
