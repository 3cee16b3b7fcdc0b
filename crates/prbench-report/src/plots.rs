//! The report's charts, as SVG text drawn with plotters' SVG backend (it escapes every text it
//! writes, so a model name or subset from data cannot close the `<svg>`).
//!
//! Each function returns the SVG, or why it could not be drawn (shown in its place). Axes say
//! their units: accuracy in %, rubric score on 0–2, k in samples.

use plotters::coord::Shift;
use plotters::prelude::*;
use prbench_records::bon::BonTable;

use crate::correlation::paper_columns;
use crate::leaderboard::{LeaderRow, Leaderboard, RowKind};
use crate::matrix::{scope_name, Matrix, MatrixBlock};
use crate::sources::{ComparisonRecord, CorrelationRecord};
use crate::summary::AccuracyRow;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), String>;

const FONT: &str = "sans-serif";
/// Model colours: the tab10 palette without its orange and grey, which mark upper bounds and
/// control baselines.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GREY: RGBColor = RGBColor(150, 150, 150);
const ORACLE: RGBColor = RGBColor(200, 120, 0);

fn e<E: std::fmt::Display>(err: E) -> String {
    err.to_string()
}

fn svg(width: u32, height: u32, draw: impl FnOnce(&Area) -> Drawn) -> Result<String, String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        draw(&root)?;
        root.present().map_err(e)?;
    }
    Ok(s)
}

/// A model spec shortened for a chart label: `gguf:/a/b/model.gguf` → `gguf:model.gguf`,
/// `dir:/a/b/rm` → `dir:rm` (the report's provenance table keeps the full spec).
pub fn short_model(spec: &str) -> String {
    for prefix in ["gguf:", "dir:", "bt:"] {
        if let Some(path) = spec.strip_prefix(prefix) {
            let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
            return format!("{prefix}{name}");
        }
    }
    spec.to_string()
}

/// The label of a leaderboard row in charts: `model · condition`, marked.
pub fn row_label(r: &LeaderRow) -> String {
    let mut s = format!("{} · {}", short_model(&r.model), r.condition);
    if r.upper_bound {
        s.push_str(" (upper bound)");
    }
    if r.kind == RowKind::Baseline {
        s.push_str(" [baseline]");
    }
    s
}

/// Grey for control baselines, orange for upper bounds, else one colour per model spec (the
/// same model keeps its colour across conditions).
fn row_color(lb: &Leaderboard, r: &LeaderRow) -> RGBColor {
    match (r.kind, r.upper_bound) {
        (RowKind::Baseline, _) => GREY,
        (_, true) => ORACLE,
        _ => {
            let mut models: Vec<&str> = Vec::new();
            for x in lb.rows.iter().filter(|x| x.kind == RowKind::Model) {
                if !models.contains(&x.model.as_str()) {
                    models.push(&x.model);
                }
            }
            let i = models.iter().position(|m| *m == r.model).unwrap_or(0);
            PALETTE[i % PALETTE.len()]
        }
    }
}

/// Chart labels of every row, with the run id added where two rows would read the same.
pub fn row_labels(lb: &Leaderboard) -> Vec<String> {
    let plain: Vec<String> = lb.rows.iter().map(row_label).collect();
    plain
        .iter()
        .zip(&lb.rows)
        .map(|(l, r)| {
            if plain.iter().filter(|x| *x == l).count() > 1 {
                format!("{l} [{}]", r.run_id)
            } else {
                l.clone()
            }
        })
        .collect()
}

/// The rows a chart draws for `r`: position-debiased when the run has them (the headline),
/// else strict single-order or reward-model accuracy.
fn headline_rows(r: &LeaderRow) -> &[AccuracyRow] {
    match &r.debiased {
        Some(d) if !d.is_empty() => d,
        _ => &r.rows,
    }
}

fn truncate_label(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Accuracy with CI whiskers: one panel per subset and one for all items (micro), one row per
/// leaderboard row; the dashed line is chance (50%).
pub fn accuracy_forest(lb: &Leaderboard) -> Result<String, String> {
    let mut scopes: Vec<String> = lb.subsets.clone();
    scopes.push("micro".into());
    let n = lb.rows.len().max(1);
    let labels_text = row_labels(lb);
    let label_w = 420u32;
    let panel_w = 200u32;
    let height = 70 + 22 * n as u32;
    let width = label_w + panel_w * scopes.len() as u32;
    svg(width, height, |root| {
        let (labels, panels) = root.split_horizontally(label_w);
        let panels = panels.split_evenly((1, scopes.len()));
        let mut ys: Vec<i32> = Vec::new();
        for (pi, (panel, scope)) in panels.iter().zip(&scopes).enumerate() {
            let mut chart = ChartBuilder::on(panel)
                .caption(scope_name(scope), (FONT, 14))
                .margin(6)
                .x_label_area_size(34)
                .build_cartesian_2d(0f64..100f64, -0.5f64..(n as f64 - 0.5))
                .map_err(e)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels(3)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .x_desc("accuracy %")
                .label_style((FONT, 11))
                .draw()
                .map_err(e)?;
            chart
                .draw_series(DashedLineSeries::new(
                    [(50.0, -0.5), (50.0, n as f64 - 0.5)],
                    3,
                    3,
                    GREY.into(),
                ))
                .map_err(e)?;
            for (i, r) in lb.rows.iter().enumerate() {
                let y = (n - 1 - i) as f64;
                if pi == 0 {
                    ys.push(chart.backend_coord(&(0.0, y)).1);
                }
                let Some(acc) = LeaderRow::row(headline_rows(r), scope) else { continue };
                let Some(p) = acc.strict else { continue };
                let color = row_color(lb, r);
                if let Some([lo, hi]) = acc.strict_ci {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(lo * 100.0, y), (hi * 100.0, y)],
                            color.stroke_width(2),
                        )))
                        .map_err(e)?;
                }
                chart
                    .draw_series(std::iter::once(Circle::new((p * 100.0, y), 4, color.filled())))
                    .map_err(e)?;
            }
        }
        for ((l, r), y) in labels_text.iter().zip(&lb.rows).zip(&ys) {
            let mark = if r.headline_metric() == "position-debiased" { " (debiased)" } else { "" };
            labels
                .draw(&Text::new(
                    truncate_label(&format!("{l}{mark}"), 64),
                    (4, *y - 6),
                    (FONT, 12).into_font().color(&BLACK),
                ))
                .map_err(e)?;
        }
        Ok(())
    })
}

/// One heatmap per matrix block: rows are conditions, columns subsets and all items; each cell
/// holds the accuracy and, for conditions other than `none`, the gain over `none` in
/// percentage points and the Holm-adjusted McNemar p. Colour: the gain (green up, red down).
pub fn matrix_heatmap(m: &Matrix, block: &MatrixBlock) -> Result<String, String> {
    let scopes: Vec<String> = block
        .accuracy
        .first()
        .map(|r| r.iter().map(|r| r.label.clone()).collect())
        .unwrap_or_default();
    let rows = m.conditions.len().max(1);
    let label_w = 180u32;
    let cell_w = 170u32;
    let cell_h = 52u32;
    let width = label_w + cell_w * scopes.len().max(1) as u32 + 10;
    let height = 40 + cell_h * rows as u32 + 10;
    svg(width, height, |root| {
        root.draw(&Text::new(
            format!("{} — accuracy %, gain over none (pp), Holm p", block.metric),
            (6, 8),
            (FONT, 13),
        ))
        .map_err(e)?;
        for (ci, col) in scopes.iter().enumerate() {
            let x = (label_w + cell_w * ci as u32) as i32;
            root.draw(&Text::new(scope_name(col), (x + 6, 26), (FONT, 12))).map_err(e)?;
        }
        for (ri, (c, accs)) in m.conditions.iter().zip(&block.accuracy).enumerate() {
            let y = (36 + cell_h * ri as u32) as i32;
            let name = if c.oracle {
                format!("{} (upper bound)", c.condition)
            } else {
                c.condition.clone()
            };
            root.draw(&Text::new(
                truncate_label(&name, 24),
                (6, y + cell_h as i32 / 2 - 6),
                (FONT, 12),
            ))
            .map_err(e)?;
            for (ci, acc) in accs.iter().enumerate() {
                let x = (label_w + cell_w * ci as u32) as i32;
                let gain = block
                    .gains
                    .iter()
                    .find(|g| g.condition == c.condition && g.scope == scope_name(&acc.label));
                let fill = match gain {
                    Some(g) => {
                        let t = (g.gain.abs() * 2.5).min(1.0);
                        let (r, gg, b) = if g.gain >= 0.0 {
                            (255.0 - 155.0 * t, 255.0 - 55.0 * t, 255.0 - 155.0 * t)
                        } else {
                            (255.0 - 25.0 * t, 255.0 - 155.0 * t, 255.0 - 155.0 * t)
                        };
                        RGBColor(r as u8, gg as u8, b as u8)
                    }
                    None => RGBColor(240, 240, 240),
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell_w as i32 - 4, y + cell_h as i32 - 4)],
                    fill.filled(),
                ))
                .map_err(e)?;
                let acc_text = match (acc.strict, acc.strict_ci) {
                    (Some(p), Some([lo, hi])) => {
                        format!("{:.1} [{:.1}, {:.1}]", p * 100.0, lo * 100.0, hi * 100.0)
                    }
                    (Some(p), None) => format!("{:.1}", p * 100.0),
                    _ => "—".into(),
                };
                root.draw(&Text::new(acc_text, (x + 6, y + 8), (FONT, 12))).map_err(e)?;
                if let Some(g) = gain {
                    root.draw(&Text::new(
                        format!("{:+.1} pp · Holm p {}", g.gain * 100.0, p_short(g.p_holm)),
                        (x + 6, y + 26),
                        (FONT, 11),
                    ))
                    .map_err(e)?;
                }
            }
        }
        Ok(())
    })
}

fn p_short(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.0e}")
    } else {
        format!("{p:.3}")
    }
}

/// Position bias of each judge row: accuracy with chosen in A (circle) and in B (square),
/// joined, and the share of A verdicts (cross); 50% dashed.
pub fn position_bias(lb: &Leaderboard) -> Option<Result<String, String>> {
    let rows: Vec<(usize, &LeaderRow)> =
        lb.rows.iter().enumerate().filter(|(_, r)| r.position_bias.is_some()).collect();
    if rows.is_empty() {
        return None;
    }
    let n = rows.len();
    let label_w = 420u32;
    let labels_text = row_labels(lb);
    let height = 90 + 24 * n as u32;
    Some(svg(label_w + 520, height, |root| {
        let (labels, plot) = root.split_horizontally(label_w);
        let mut chart = ChartBuilder::on(&plot)
            .caption("position bias", (FONT, 14))
            .margin(6)
            .x_label_area_size(34)
            .build_cartesian_2d(0f64..100f64, -0.5f64..(n as f64 - 0.5))
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("%")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style((FONT, 11))
            .draw()
            .map_err(e)?;
        chart
            .draw_series(DashedLineSeries::new(
                [(50.0, -0.5), (50.0, n as f64 - 0.5)],
                3,
                3,
                GREY.into(),
            ))
            .map_err(e)?;
        // No legend box (it would cover the points of a judge that leans to a slot): the
        // figure's caption says what each mark is.
        for (j, (i, r)) in rows.iter().enumerate() {
            let y = (n - 1 - j) as f64;
            let pb = r.position_bias.as_ref().expect("filtered");
            let color = row_color(lb, r);
            let (a, b) = (
                pb.accuracy_chosen_in_a.map(|v| v * 100.0),
                pb.accuracy_chosen_in_b.map(|v| v * 100.0),
            );
            if let (Some(a), Some(b)) = (a, b) {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(a, y), (b, y)],
                        color.stroke_width(1),
                    )))
                    .map_err(e)?;
            }
            chart.draw_series(a.map(|a| Circle::new((a, y), 5, color.filled()))).map_err(e)?;
            chart
                .draw_series(b.map(|b| {
                    EmptyElement::at((b, y)) + Rectangle::new([(-5, -5), (5, 5)], color.filled())
                }))
                .map_err(e)?;
            chart
                .draw_series(pb.share_a_verdicts.map(|s| {
                    EmptyElement::at((s * 100.0, y)) + Cross::new((0, 0), 5, BLACK.stroke_width(2))
                }))
                .map_err(e)?;
            labels
                .draw(&Text::new(
                    truncate_label(&labels_text[*i], 64),
                    (4, chart.backend_coord(&(0.0, y)).1 - 6),
                    (FONT, 12),
                ))
                .map_err(e)?;
        }
        Ok(())
    }))
}

/// Best-of-k curves of one table: expected rubric score (0–2) against k (log₂ axis), one line
/// per reward model and the two references (random pick, oracle, in grey), each with its
/// bootstrap 95% CI band when the table has CIs.
pub fn bon_curves(t: &BonTable) -> Result<String, String> {
    let kmax = t.ks.iter().copied().max().unwrap_or(1).max(2) as f64;
    let (lo, hi) = t
        .rows
        .iter()
        .flat_map(|r| r.curve.iter())
        .flat_map(|p| {
            let (a, b) = p.overall_ci.map_or((p.overall, p.overall), |c| (c[0], c[1]));
            [a, b]
        })
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) =
        if lo.is_finite() { ((lo - 0.1).max(0.0), (hi + 0.1).min(2.0)) } else { (0.0, 2.0) };
    svg(760, 420, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(format!("best-of-k, judge {} (N = {})", t.judge, t.n), (FONT, 14))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(50)
            .right_y_label_area_size(0)
            .build_cartesian_2d(0f64..kmax.log2() + 0.1, lo..hi.max(lo + 0.1))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("k (samples drawn, log₂ scale)")
            .y_desc("expected rubric score (0–2)")
            .x_labels(kmax.log2() as usize + 1)
            // Ticks fall on whole powers of two only (k = 1, 2, 4, …); others stay unlabelled.
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 {
                    format!("{}", 2f64.powf(x.round()))
                } else {
                    String::new()
                }
            })
            .label_style((FONT, 11))
            .draw()
            .map_err(e)?;
        let mut model_i = 0;
        for r in &t.rows {
            let color = if r.kind == "reference" {
                GREY
            } else {
                model_i += 1;
                PALETTE[(model_i - 1) % PALETTE.len()]
            };
            let pts: Vec<(f64, f64)> = r
                .curve
                .iter()
                .filter(|p| p.overall.is_finite())
                .map(|p| ((p.k as f64).log2(), p.overall))
                .collect();
            if r.curve.iter().all(|p| p.overall_ci.is_some()) && !r.curve.is_empty() {
                let mut band: Vec<(f64, f64)> = r
                    .curve
                    .iter()
                    .map(|p| ((p.k as f64).log2(), p.overall_ci.unwrap()[1]))
                    .collect();
                band.extend(
                    r.curve.iter().rev().map(|p| ((p.k as f64).log2(), p.overall_ci.unwrap()[0])),
                );
                chart
                    .draw_series(std::iter::once(Polygon::new(band, color.mix(0.15).filled())))
                    .map_err(e)?;
            }
            let label = match (&r.spec, &r.condition) {
                (Some(s), Some(c)) => format!("{} · {c}", short_model(s)),
                _ => r.name.clone(),
            };
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(e)?
                .label(truncate_label(&label, 50))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(e)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(GREY)
            .label_font((FONT, 11))
            .draw()
            .map_err(e)?;
        Ok(())
    })
}

/// The caption of a correlation scatter: rho, weighted tau and NDCG.
pub fn correlation_caption(c: &CorrelationRecord) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |v| format!("{v:.3}"));
    format!(
        "Spearman's rho {}, weighted tau {}, NDCG {} ({} reward models)",
        f(c.statistic("spearman")),
        f(c.statistic("weighted_tau")),
        f(c.statistic("ndcg")),
        c.models.len()
    )
}

/// Benchmark accuracy (%) against the downstream score, one point per reward model, labelled.
pub fn correlation_scatter(c: &CorrelationRecord) -> Result<String, String> {
    let xs: Vec<f64> = c.models.iter().map(|m| m.1 * 100.0).collect();
    let ys: Vec<f64> = c.models.iter().map(|m| m.2).collect();
    let span = |v: &[f64]| {
        let (lo, hi) =
            v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        if !lo.is_finite() {
            (0.0, 1.0)
        } else {
            let pad = ((hi - lo) * 0.15).max(1e-3);
            (lo - pad, hi + pad)
        }
    };
    let (x0, x1) = span(&xs);
    let (y0, y1) = span(&ys);
    svg(760, 460, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(correlation_caption(c), (FONT, 13))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("benchmark accuracy %")
            .y_desc("downstream score")
            .label_style((FONT, 11))
            .draw()
            .map_err(e)?;
        for (i, m) in c.models.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let p = (m.1 * 100.0, m.2);
            // Labels of points in the right half go to their left, so none runs off the chart.
            let label = truncate_label(&short_model(&m.0), 36);
            let dx =
                if p.0 > (x0 + x1) / 2.0 { -7 - (label.chars().count() as i32 * 6) } else { 7 };
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(p)
                        + Circle::new((0, 0), 5, color.filled())
                        + Text::new(label, (dx, -12), (FONT, 11)),
                ))
                .map_err(e)?;
        }
        Ok(())
    })
}

/// A point and its interval (none when the statistic is defined on no resample).
type Whisker = (f64, Option<(f64, f64)>);

/// One panel per statistic, one row per label: each row's point with its interval as a whisker,
/// one colour per row; a dashed line at 0 where 0 is inside the panel's range. `panels` are
/// (title, x range, one whisker per row).
fn stat_forest(
    labels: &[String],
    panels: &[(String, (f64, f64), Vec<Whisker>)],
) -> Result<String, String> {
    let n = labels.len().max(1);
    let label_w = 260u32;
    let panel_w = 190u32;
    let height = 70 + 28 * n as u32;
    let width = label_w + panel_w * panels.len().max(1) as u32;
    svg(width, height, |root| {
        let (label_area, area) = root.split_horizontally(label_w);
        let areas = area.split_evenly((1, panels.len().max(1)));
        let mut ys: Vec<i32> = Vec::new();
        for (pi, (area, (title, (lo, hi), rows))) in areas.iter().zip(panels).enumerate() {
            let mut chart = ChartBuilder::on(area)
                .caption(title, (FONT, 14))
                .margin(6)
                // Room between panels, so one panel's last tick label does not run into the next's first.
                .margin_left(16)
                .margin_right(16)
                .x_label_area_size(30)
                .build_cartesian_2d(*lo..*hi, -0.5f64..(n as f64 - 0.5))
                .map_err(e)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels(5)
                .x_label_formatter(&|x| format!("{x:.1}"))
                .label_style((FONT, 11))
                .draw()
                .map_err(e)?;
            if *lo < 0.0 && *hi > 0.0 {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(0.0, -0.5), (0.0, n as f64 - 0.5)],
                        3,
                        3,
                        GREY.into(),
                    ))
                    .map_err(e)?;
            }
            for (i, w) in rows.iter().enumerate() {
                let y = (n - 1 - i) as f64;
                if pi == 0 {
                    ys.push(chart.backend_coord(&(*lo, y)).1);
                }
                let (p, ci) = w;
                let color = PALETTE[i % PALETTE.len()];
                if let Some((a, b)) = ci {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(*a, y), (*b, y)],
                            color.stroke_width(2),
                        )))
                        .map_err(e)?;
                    for end in [*a, *b] {
                        chart
                            .draw_series(std::iter::once(
                                EmptyElement::at((end, y))
                                    + PathElement::new(
                                        vec![(0, -5), (0, 5)],
                                        color.stroke_width(2),
                                    ),
                            ))
                            .map_err(e)?;
                    }
                }
                chart
                    .draw_series(std::iter::once(Circle::new((*p, y), 5, color.filled())))
                    .map_err(e)?;
            }
        }
        for (l, y) in labels.iter().zip(&ys) {
            label_area
                .draw(&Text::new(
                    truncate_label(l, 38),
                    (4, *y - 6),
                    (FONT, 12).into_font().color(&BLACK),
                ))
                .map_err(e)?;
        }
        Ok(())
    })
}

/// A comparison of several benchmarks: per statistic (NDCG, weighted tau, rho, tau-b, RBO), each
/// benchmark's value with its bootstrap interval, one row and colour per benchmark.
pub fn comparison_forest(c: &ComparisonRecord) -> Result<String, String> {
    let labels: Vec<String> = c.sets.iter().map(|s| s.name.clone()).collect();
    let panels = paper_columns::<prbench_stats::StatInterval>(c.bootstrap.rbo_p)
        .into_iter()
        .map(|(title, field)| {
            let range = if title.starts_with("NDCG") || title.starts_with("RBO") {
                (0.0, 1.0)
            } else {
                (-1.0, 1.0)
            };
            let rows = c.sets.iter().map(|s| {
                let v = field(&s.correlation.bootstrap.stats);
                (v.point, v.ci.map(|c| (c.lo, c.hi)))
            });
            (title, range, rows.collect())
        })
        .collect::<Vec<_>>();
    stat_forest(&labels, &panels)
}

/// The paired differences of a comparison: per statistic, each pair's difference (first minus
/// second) with its bootstrap interval; dashed: no difference.
pub fn difference_forest(c: &ComparisonRecord) -> Result<String, String> {
    let labels: Vec<String> = c.pairs.iter().map(|p| format!("{} − {}", p.a, p.b)).collect();
    let panels = paper_columns::<prbench_stats::PairedDifference>(c.bootstrap.rbo_p)
        .into_iter()
        .map(|(title, field)| {
            let range = if title.starts_with("NDCG") || title.starts_with("RBO") {
                (-1.0, 1.0)
            } else {
                (-2.0, 2.0)
            };
            let rows = c.pairs.iter().map(|p| {
                let d = field(&p.difference);
                (d.point, d.ci.map(|c| (c.lo, c.hi)))
            });
            (title, range, rows.collect())
        })
        .collect::<Vec<_>>();
    stat_forest(&labels, &panels)
}

/// A row of the accuracy table, for the HTML leaderboard cell: `58.3 [33.3, 83.3]`.
pub fn acc_text(r: Option<&AccuracyRow>) -> String {
    match r {
        Some(AccuracyRow { strict: Some(p), strict_ci: Some([lo, hi]), .. }) => {
            format!("{:.1} [{:.1}, {:.1}]", p * 100.0, lo * 100.0, hi * 100.0)
        }
        Some(AccuracyRow { strict: Some(p), .. }) => format!("{:.1}", p * 100.0),
        _ => "—".into(),
    }
}
