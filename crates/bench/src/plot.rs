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

/// Modelled cycles per switch against N, ring pattern, SA-1100 and
/// ARM926EJ-S side by side: one line per mode and touch size (log scale),
/// like the context-switch figure of Wiggins et al. (ACSAC 2003). The modes are those of the main
/// tables ([`main_modes`]): naive, FCSE-only, FASS under the default
/// (exclusive-windows) rule and FASS round-robin under the conservative
/// rule (dashed).
pub fn switch_cost(r: &Results, path: &Path) -> Result<(), BenchError> {
    fonts()?;
    let root = BitMapBackend::new(path, (1500, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let ns = r.grid.ns();
    let xmax = f64::from(*ns.last().unwrap_or(&64)) + 2.0;
    for (cpu, area) in Cpu::ALL.iter().zip(panels.iter()) {
        let mut ymax = 10.0f64;
        let mut ymin = f64::INFINITY;
        for mode in main_modes() {
            for &t in r.grid.touches() {
                for &n in ns {
                    if let Some(o) = r.get(*cpu, Pattern::Ring, mode, t, n) {
                        ymax = ymax.max(o.cycles_per_switch());
                        ymin = ymin.min(o.cycles_per_switch());
                    }
                }
            }
        }
        let ymin = if ymin.is_finite() { ymin / 2.0 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{}: ring, MODELLED cycles per switch", cpu.name()),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..xmax, (ymin..ymax * 2.0).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("processes in the ring (N)")
            .y_desc("modelled cycles per switch")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        let touches = r.grid.touches();
        for mode in main_modes() {
            for (i, &t) in touches.iter().enumerate() {
                let color = shade(mode_color(mode, true), i, touches.len());
                let pts: Vec<(f64, f64)> = ns
                    .iter()
                    .filter_map(|&n| {
                        r.get(*cpu, Pattern::Ring, mode, t, n)
                            .map(|o| (f64::from(n), o.cycles_per_switch()))
                    })
                    .collect();
                let label = format!(
                    "{}, {}",
                    short_name(mode),
                    if t == 0 {
                        "0 KiB".to_string()
                    } else {
                        format!("{} KiB", t / 1024)
                    }
                );
                let dashed = mode.rule() == Some(Rule::Conservative);
                line(&mut chart, pts.clone(), color, dashed)?
                    .label(label)
                    .legend(move |(x, y)| legend_mark(x, y, color, dashed));
                chart
                    .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// A line, solid or dashed; returns the series for its legend entry.
fn line<'a, 'b, DB, CT>(
    chart: &'b mut ChartContext<'a, DB, CT>,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
    dashed: bool,
) -> Result<&'b mut plotters::chart::SeriesAnno<'a, DB>, BenchError>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let style = color.stroke_width(2);
    if dashed {
        chart
            .draw_series(DashedLineSeries::new(pts, 8, 5, style))
            .map_err(err)
    } else {
        chart.draw_series(LineSeries::new(pts, style)).map_err(err)
    }
}

/// The legend entry of a line: a long stroke (solid) or a short one (dashed).
fn legend_mark(x: i32, y: i32, color: RGBColor, dashed: bool) -> PathElement<(i32, i32)> {
    if dashed {
        // A short stroke marks the dashed lines in the legend.
        PathElement::new(vec![(x, y), (x + 7, y)], color.stroke_width(3))
    } else {
        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
    }
}

/// Full flushes per 1,000 switches against N for every policy under both
/// recycling rules (solid: exclusive windows; dashed: conservative), ring
/// and IPC side by side ([`POLICY_CPU`] model). Policies that give the same
/// figures overlap; their markers shrink in table order so every one stays
/// visible.
pub fn policies(r: &Results, path: &Path) -> Result<(), BenchError> {
    fonts()?;
    let root = BitMapBackend::new(path, (1500, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let panels = root.split_evenly((1, 2));
    let ns = r.grid.ns();
    let touch = policy_touch(r);
    let xmax = f64::from(*ns.last().unwrap_or(&64)) + 2.0;
    for (pattern, area) in [Pattern::Ring, Pattern::Ipc].iter().zip(panels.iter()) {
        let mut ymax = 10.0f64;
        for mode in policy_modes() {
            for &n in ns {
                if let Some(o) = r.get(POLICY_CPU, *pattern, mode, touch, n) {
                    ymax = ymax.max(o.flushes_per_thousand());
                }
            }
        }
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!(
                    "{} {}, {} KiB: full flushes / 1,000 switches (MODELLED)",
                    POLICY_CPU.name(),
                    pattern.name(),
                    touch / 1024
                ),
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..xmax, -ymax * 0.03..ymax * 1.45)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(match pattern {
                Pattern::Ring => "processes in the ring (N)",
                Pattern::Ipc => "clients (N), plus one server",
            })
            .y_desc("full flushes per 1,000 switches")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        for (i, mode) in policy_modes().into_iter().enumerate() {
            let Mode::Fass(p, rule) = mode else { continue };
            let color = mode_color(mode, false);
            let dashed = rule == Rule::Conservative;
            let pts: Vec<(f64, f64)> = ns
                .iter()
                .filter_map(|&n| {
                    r.get(POLICY_CPU, *pattern, mode, touch, n)
                        .map(|o| (f64::from(n), o.flushes_per_thousand()))
                })
                .collect();
            line(&mut chart, pts.clone(), color, dashed)?
                .label(format!("{}, {}", p.name(), rule.name()))
                .legend(move |(x, y)| legend_mark(x, y, color, dashed));
            let size = 8 - 2 * (i % PolicyKind::ALL.len()) as i32;
            if dashed {
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(|q| Circle::new(q, size, color.stroke_width(2))),
                    )
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(|q| Circle::new(q, size, color.filled())),
                    )
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
