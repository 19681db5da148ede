//! PNG figures with `plotters` (bitmap backend). Text is drawn with the
//! Hack font embedded by the `epaint_default_fonts` crate through plotters'
//! `ab_glyph` feature, so no system font or fontconfig is needed.

use crate::model::{Cpu, Mode, Pattern, PolicyKind, Rule};
use crate::report::{main_modes, policy_touch};
use crate::suite::{policy_modes, Results, POLICY_CPU};
use crate::BenchError;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;
use std::sync::Once;

const FONT: &str = "sans-serif";

fn fonts() -> Result<(), BenchError> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = register_font(FONT, FontStyle::Normal, epaint_default_fonts::HACK_REGULAR)
            .map_err(|_| BenchError::Plot("embedded font rejected".into()));
    });
    result
}

fn err<E: std::fmt::Debug>(e: E) -> BenchError {
    BenchError::Plot(format!("{e:?}"))
}

/// A mode's colour; `in_main`: in the switch-cost plot, where the
/// conservative-rule FASS line gets a colour of its own.
fn mode_color(m: Mode, in_main: bool) -> RGBColor {
    match m {
        Mode::Naive => RGBColor(200, 30, 30),
        Mode::Fcse => RGBColor(30, 90, 200),
        Mode::Fass(_, Rule::Conservative) if in_main => RGBColor(120, 70, 20),
        Mode::Fass(PolicyKind::RoundRobin, _) => RGBColor(20, 140, 40),
        Mode::Fass(PolicyKind::Random, _) => RGBColor(150, 60, 170),
        Mode::Fass(PolicyKind::FewestSlots, _) => RGBColor(230, 130, 0),
        Mode::Fass(PolicyKind::Lru, _) => RGBColor(0, 150, 160),
    }
}

/// The legend name of a mode in the switch-cost plot.
fn short_name(m: Mode) -> String {
    match m {
        Mode::Fass(p, Rule::Exclusive) => format!("FASS {}, excl. windows", p.key()),
        Mode::Fass(p, Rule::Conservative) => format!("FASS {}, conservative", p.key()),
        m => m.to_string(),
    }
}

/// Lighter for larger working sets: index 0 is the darkest.
fn shade(c: RGBColor, i: usize, of: usize) -> RGBColor {
    let f = if of <= 1 {
        0.0
    } else {
        i as f64 / (of as f64) * 0.65
    };
    let mix = |x: u8| (f64::from(x) + (255.0 - f64::from(x)) * f) as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// Most series in one panel: more would not be read.
pub const MAX_SERIES: usize = 6;

/// A tick label: an integer below 1,000, then `1k`, `2.5k`, `10k`, `100k`
/// (never `10.0` nor `100000.0`).
#[must_use]
pub fn tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let r = v.round();
    if r.abs() < 1000.0 {
        return format!("{r:.0}");
    }
    let k = v / 1000.0;
    if (k - k.round()).abs() < 0.05 {
        format!("{:.0}k", k.round())
    } else {
        format!("{k:.1}k")
    }
}

/// Ticks of a logarithmic axis from `lo` to `hi`: 1, 2, 3 and 5 times each
/// power of ten inside.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut d = 10f64.powf(lo.max(1e-9).log10().floor());
    while d <= hi {
        for m in [1.0, 2.0, 3.0, 5.0] {
            let t = d * m;
            if (lo..=hi).contains(&t) {
                v.push(t);
            }
        }
        d *= 10.0;
    }
    v
}

/// One line of a panel: its points, colour, dash and legend text.
struct Series {
    label: String,
    color: RGBColor,
    dashed: bool,
    pts: Vec<(f64, f64)>,
}

/// Draws one panel into `area`: the series on the left, their legend in a
/// strip of its own on the right (never over the data), integer x ticks
/// and [`tick`] y labels; `log`: a logarithmic y axis.
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log: bool,
) -> Result<(), BenchError> {
    if series.len() > MAX_SERIES {
        return Err(BenchError::Plot(format!(
            "{caption}: {} series, at most {MAX_SERIES}",
            series.len()
        )));
    }
    let (w, _) = area.dim_in_pixel();
    let (plot_area, legend_area) = area.split_horizontally(w.saturating_sub(230));
    let pts = || series.iter().flat_map(|s| s.pts.iter().copied());
    let xmax = pts().map(|p| p.0).fold(2.0f64, f64::max) + 2.0;
    let ymax = pts().map(|p| p.1).fold(1.0f64, f64::max);
    let ymin = pts().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let ymin = if ymin.is_finite() { ymin } else { 1.0 };
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_label_formatter(&|v| format!("{:.0}", v))
                .y_label_formatter(&|v| tick(*v))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()
                .map_err(err)?;
            for s in series {
                let style = s.color.stroke_width(2);
                if s.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(s.pts.clone(), 8, 5, style))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(s.pts.clone(), style))
                        .map_err(err)?;
                }
                chart
                    .draw_series(s.pts.iter().map(|p| Circle::new(*p, 3, s.color.filled())))
                    .map_err(err)?;
            }
        }};
    }
    let builder = || {
        let mut b = ChartBuilder::on(&plot_area);
        b.caption(caption, (FONT, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60);
        b
    };
    if log {
        let (lo, hi) = (ymin / 1.5, ymax * 1.5);
        draw!(builder()
            .build_cartesian_2d(
                0f64..xmax,
                (lo..hi).log_scale().with_key_points(log_ticks(lo, hi))
            )
            .map_err(err)?);
    } else {
        draw!(builder()
            .build_cartesian_2d(0f64..xmax, 0f64..ymax * 1.1)
            .map_err(err)?);
    }
    // The legend: one row per series, in the strip beside the plot.
    for (i, s) in series.iter().enumerate() {
        let y = 60 + 24 * i as i32;
        let stroke = if s.dashed { 10 } else { 24 };
        legend_area
            .draw(&PathElement::new(
                vec![(6, y), (6 + stroke, y)],
                s.color.stroke_width(3),
            ))
            .map_err(err)?;
        legend_area
            .draw(&Text::new(s.label.clone(), (36, y - 7), (FONT, 13)))
            .map_err(err)?;
    }
    Ok(())
}

fn touch_label(t: u32) -> String {
    format!("{} KiB", t / 1024)
}

/// lat_ctx against the number of processes, in the shape of the
/// context-switch figure of Wiggins et al. (ACSAC 2003): the SA-1100 model,
/// the ring, naive (the flushing kernel) and FASS (fass's default policy
/// and rule), each for 0, 4 and 16 KiB touched per turn (the sizes the
/// grid has): modelled cycles per switch, log scale.
pub fn lat_ctx(r: &Results, path: &Path) -> Result<(), BenchError> {
    fonts()?;
    let root = BitMapBackend::new(path, (1100, 640)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let fass = crate::report::default_fass();
    let touches: Vec<u32> = [0, 4096, 16384]
        .into_iter()
        .filter(|t| r.grid.touches().contains(t))
        .collect();
    let mut series = Vec::new();
    for (mode, name) in [(Mode::Naive, "naive"), (fass, "FASS")] {
        for (i, &t) in touches.iter().enumerate() {
            series.push(Series {
                label: format!("{name}, {}", touch_label(t)),
                color: shade(mode_color(mode, true), i, touches.len()),
                dashed: false,
                pts: ring_points(r, Cpu::Sa1100, mode, t),
            });
        }
    }
    panel(
        &root,
        "lat_ctx on the SA-1100: cycles per switch (MODELLED)",
        "processes in the ring",
        "cycles per switch (log)",
        &series,
        true,
    )?;
    root.present().map_err(err)?;
    Ok(())
}

fn ring_points(r: &Results, cpu: Cpu, mode: Mode, touch: u32) -> Vec<(f64, f64)> {
    r.grid
        .ns()
        .iter()
        .filter_map(|&n| {
            r.get(cpu, Pattern::Ring, mode, touch, n)
                .map(|o| (f64::from(n), o.cycles_per_switch()))
        })
        .collect()
}

/// Which mode switches cheapest, per CPU: modelled cycles per switch
/// against N, ring, 4 KiB touched per turn (the grid's largest if it has
/// no 4 KiB), SA-1100 and ARM926EJ-S side by side, one line per mode of
/// the main tables ([`main_modes`]; the conservative-rule FASS dashed).
pub fn switch_cost(r: &Results, path: &Path) -> Result<(), BenchError> {
    fonts()?;
    let root = BitMapBackend::new(path, (1600, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let t = if r.grid.touches().contains(&4096) {
        4096
    } else {
        r.grid.touches().last().copied().unwrap_or(0)
    };
    for (cpu, area) in Cpu::ALL.iter().zip(panels.iter()) {
        let series: Vec<Series> = main_modes()
            .into_iter()
            .map(|mode| Series {
                label: short_name(mode),
                color: mode_color(mode, true),
                dashed: mode.rule() == Some(Rule::Conservative),
                pts: ring_points(r, *cpu, mode, t),
            })
            .collect();
        panel(
            area,
            &format!("{}: ring, {} (MODELLED)", cpu.name(), touch_label(t)),
            "processes in the ring",
            "cycles per switch (log)",
            &series,
            true,
        )?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// How often each victim policy flushes: full flushes per 1,000 switches
/// against N, every policy under the default rule (exclusive windows) and
/// round-robin under the conservative rule (dashed, the seed baseline),
/// ring and IPC side by side ([`POLICY_CPU`] model). Policies with the
/// same figures overlap.
pub fn policies(r: &Results, path: &Path) -> Result<(), BenchError> {
    fonts()?;
    let root = BitMapBackend::new(path, (1600, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let touch = policy_touch(r);
    let modes: Vec<Mode> = policy_modes()
        .into_iter()
        .filter(|m| {
            matches!(
                m,
                Mode::Fass(_, Rule::Exclusive) | Mode::Fass(PolicyKind::RoundRobin, _)
            )
        })
        .collect();
    for (pattern, area) in [Pattern::Ring, Pattern::Ipc].iter().zip(panels.iter()) {
        let series: Vec<Series> = modes
            .iter()
            .filter_map(|&mode| {
                let Mode::Fass(p, rule) = mode else {
                    return None;
                };
                Some(Series {
                    label: format!(
                        "{}, {}",
                        p.key(),
                        match rule {
                            Rule::Exclusive => "excl. windows",
                            Rule::Conservative => "conservative",
                        }
                    ),
                    color: mode_color(mode, rule == Rule::Conservative),
                    dashed: rule == Rule::Conservative,
                    pts: r
                        .grid
                        .ns()
                        .iter()
                        .filter_map(|&n| {
                            r.get(POLICY_CPU, *pattern, mode, touch, n)
                                .map(|o| (f64::from(n), o.flushes_per_thousand()))
                        })
                        .collect(),
                })
            })
            .collect();
        panel(
            area,
            &format!(
                "{} {}, {}: full flushes (MODELLED)",
                match POLICY_CPU {
                    Cpu::Sa1100 => "SA-1100",
                    Cpu::Arm926 => "ARM926EJ-S",
                },
                pattern.name(),
                touch_label(touch)
            ),
            match pattern {
                Pattern::Ring => "processes in the ring",
                Pattern::Ipc => "clients, plus one server",
            },
            "full flushes per 1,000 switches",
            &series,
            false,
        )?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_integers_or_thousands() {
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(999.6), "1k");
        assert_eq!(tick(1000.0), "1k");
        assert_eq!(tick(2500.0), "2.5k");
        assert_eq!(tick(10000.0), "10k");
        assert_eq!(tick(100000.0), "100k");
        assert_eq!(tick(f64::NAN), "");
    }
}
