//! The QEMU figures of one bench run, keyed by board, and
//! `<target>/bench/qemu.csv` (header [`CSV_HEADER`]).
//!
//! Every figure carries the board it was measured on, so boards other than
//! [`BOARD`] add rows (and the report per-board columns) without changing
//! the format.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::line::{BenchLine, Kind, Mode};

/// The board every figure comes from today (`-M versatilepb -cpu arm926`).
pub const BOARD: &str = "versatilepb";
/// The first line of `qemu.csv`.
pub const CSV_HEADER: &str = "board,kind,mode,n,touch,value";

/// Where a figure was measured and what it measured.
pub type Key = (&'static str, Kind, Mode, u32, u32);

/// The figures of a run: (board, kind, mode, n, touch) → instructions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    map: BTreeMap<Key, f64>,
    /// The (shortest, longest) single transit, where the line gave them.
    ranges: BTreeMap<Key, (f64, f64)>,
}

impl Figures {
    /// No figure.
    pub fn new() -> Figures {
        Figures::default()
    }

    /// Adds the lines one boot on `board` printed. Returns the keys that
    /// were already present (a figure printed twice); the later value wins.
    pub fn add(&mut self, board: &'static str, lines: &[BenchLine]) -> Vec<Key> {
        let mut dup = Vec::new();
        for l in lines {
            let k = (board, l.kind, l.mode, l.n, l.touch);
            if self.map.insert(k, l.value).is_some() {
                dup.push(k);
            }
            match l.range {
                Some(r) => self.ranges.insert(k, r),
                None => self.ranges.remove(&k),
            };
        }
        dup
    }

    /// The figure of `(board, kind, mode, n, touch)`, if measured.
    pub fn get(
        &self,
        board: &'static str,
        kind: Kind,
        mode: Mode,
        n: u32,
        touch: u32,
    ) -> Option<f64> {
        self.map.get(&(board, kind, mode, n, touch)).copied()
    }

    /// The shortest and longest single transit of a figure, if its line
    /// gave them.
    pub fn range(&self, k: &Key) -> Option<(f64, f64)> {
        self.ranges.get(k).copied()
    }

    /// Whether no figure was collected.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many figures.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Every figure, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, f64)> {
        self.map.iter().map(|(k, v)| (k, *v))
    }

    /// Every figure of `kind` on `board`: (mode, n, touch, value).
    pub fn of_kind(&self, board: &str, kind: Kind) -> Vec<(Mode, u32, u32, f64)> {
        self.iter()
            .filter(|((b, k, ..), _)| *b == board && *k == kind)
            .map(|((_, _, m, n, t), v)| (*m, *n, *t, v))
            .collect()
    }

    /// `qemu.csv`: the header, then one line per figure, sorted.
    pub fn csv(&self) -> String {
        let mut out = format!("{CSV_HEADER}\n");
        for ((board, kind, mode, n, touch), v) in self.iter() {
            let _ = writeln!(
                out,
                "{board},{},{},{n},{touch},{v}",
                kind.name(),
                mode.name()
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::line::parse_log;

    #[test]
    fn csv_has_the_header_and_one_sorted_line_per_figure() {
        let mut f = Figures::new();
        let lines = parse_log([
            "BENCH kind=yield mode=fass n=14 touch=4096 value=77 unit=instructions",
            "BENCH kind=switch mode=naive n=2 touch=0 value=209 unit=instructions",
            "BENCH kind=yield mode=naive n=2 touch=0 value=650.5 unit=instructions",
        ])
        .unwrap();
        assert!(f.add(BOARD, &lines).is_empty());
        assert_eq!(
            f.csv(),
            "board,kind,mode,n,touch,value\n\
             versatilepb,yield,naive,2,0,650.5\n\
             versatilepb,yield,fass,14,4096,77\n\
             versatilepb,switch_tail,naive,2,0,209\n"
        );
        assert_eq!(Figures::new().csv(), "board,kind,mode,n,touch,value\n");
    }

    #[test]
    fn boards_are_kept_apart_and_duplicates_reported() {
        let mut f = Figures::new();
        let a = parse_log(["BENCH kind=ring mode=fass n=2 touch=0 value=100 unit=instructions"])
            .unwrap();
        let b = parse_log(["BENCH kind=ring mode=fass n=2 touch=0 value=120 unit=instructions"])
            .unwrap();
        assert!(f.add(BOARD, &a).is_empty());
        assert!(f.add("collie", &b).is_empty());
        assert_eq!(f.get(BOARD, Kind::Ring, Mode::Fass, 2, 0), Some(100.0));
        assert_eq!(f.get("collie", Kind::Ring, Mode::Fass, 2, 0), Some(120.0));
        assert_eq!(f.get(BOARD, Kind::Ring, Mode::Fass, 2, 4096), None);
        assert!(f.csv().contains("\ncollie,ring,fass,2,0,120\n"));
        assert_eq!(
            f.add(BOARD, &b),
            vec![(BOARD, Kind::Ring, Mode::Fass, 2, 0)]
        );
        assert_eq!(f.get(BOARD, Kind::Ring, Mode::Fass, 2, 0), Some(120.0));
        assert_eq!(f.len(), 2);
    }
}
