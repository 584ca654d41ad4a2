//! A self-contained HTML report: tables and inline SVG line charts, no
//! scripts, fonts or network needed to view it.
//!
//! The charts are drawn here rather than with `plotters`: its SVG backend
//! needs the `ttf` feature (system font libraries) to lay out text, which a
//! fresh machine may not have, and the report needs only polylines, axes
//! and labels.

use core::fmt::Write;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (theory) instead of solid with markers (measured).
    pub dashed: bool,
    /// Markers only, no line between them (a scatter of observations).
    pub scatter: bool,
    /// Index into the palette; a measured series and its theory share one.
    pub color: usize,
    /// Per point, the lowest and highest of the runs it is the mean of
    /// (drawn as a bar); empty: none.
    pub spread: Vec<(f64, f64)>,
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// Escapes text for HTML and SVG.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG line chart over `x` and `y` ranges.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x: (f64, f64),
    y: (f64, f64),
    series: &[Series],
) -> String {
    // Round ticks: y on steps of 1, 2 or 5 times a power of ten, the range
    // widened to the ticks around it; x on the data's own x values when
    // the series share a few, else round steps too.
    let y_ticks = nice_ticks(y.0, y.1, 5);
    let y = (y_ticks[0], *y_ticks.last().expect("at least two"));
    let x_ticks = shared_x(series).unwrap_or_else(|| nice_ticks(x.0, x.1, 5));
    let x = (
        x.0.min(x_ticks[0]),
        x.1.max(*x_ticks.last().expect("at least one")),
    );
    let (w, h) = (720.0, 420.0);
    let (left, right, top, bottom) = (70.0, 190.0, 40.0, 50.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let sx = |v: f64| left + (v - x.0) / (x.1 - x.0).max(1e-12) * pw;
    let sy = |v: f64| top + ph - (v - y.0) / (y.1 - y.0).max(1e-12) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(
        s,
        r#"<text x="{}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        left,
        escape(title)
    );
    for &fx in &x_ticks {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#ddd"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
            sx(fx),
            top,
            top + ph,
            top + ph + 18.0,
            trim(fx)
        );
    }
    for &fy in &y_ticks {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{2:.1}" y2="{1:.1}" stroke="#ddd"/><text x="{3:.1}" y="{4:.1}" text-anchor="end">{5}</text>"##,
            left,
            sy(fy),
            left + pw,
            left - 6.0,
            sy(fy) + 4.0,
            trim(fy)
        );
    }
    let _ = write!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"##,
        left + pw / 2.0,
        h - 10.0,
        escape(x_label),
        top + ph / 2.0,
        escape(y_label)
    );
    for (i, ser) in series.iter().enumerate() {
        let color = PALETTE[ser.color % PALETTE.len()];
        let pts: Vec<String> = ser
            .points
            .iter()
            .map(|&(px, py)| format!("{:.1},{:.1}", sx(px), sy(py.clamp(y.0, y.1))))
            .collect();
        let dash = if ser.dashed {
            r#" stroke-dasharray="5,4""#
        } else {
            ""
        };
        if !ser.scatter {
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                pts.join(" ")
            );
        }
        if !ser.dashed {
            // A marker shape per series as well as a colour: a line that
            // lies on another still shows its own markers.
            for &(px, py) in &ser.points {
                let (cx, cy) = (sx(px), sy(py.clamp(y.0, y.1)));
                let _ = write!(s, "{}", marker(ser.color, cx, cy, color));
            }
        }
        for (&(px, _), &(lo, hi)) in ser.points.iter().zip(&ser.spread) {
            let (x0, y0, y1) = (sx(px), sy(lo.clamp(y.0, y.1)), sy(hi.clamp(y.0, y.1)));
            let _ = write!(
                s,
                r#"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x0:.1}" y2="{y1:.1}" stroke="{color}" stroke-width="1.5"/><line x1="{:.1}" y1="{y0:.1}" x2="{:.1}" y2="{y0:.1}" stroke="{color}"/><line x1="{:.1}" y1="{y1:.1}" x2="{:.1}" y2="{y1:.1}" stroke="{color}"/>"#,
                x0 - 4.0,
                x0 + 4.0,
                x0 - 4.0,
                x0 + 4.0
            );
        }
        let ly = top + 14.0 + 16.0 * i as f64;
        if ser.scatter {
            let _ = write!(
                s,
                r#"{}<text x="{:.1}" y="{:.1}">{}</text>"#,
                marker(ser.color, left + pw + 24.0, ly, color),
                left + pw + 42.0,
                ly + 4.0,
                escape(&ser.label)
            );
            continue;
        }
        let _ = write!(
            s,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"#,
            left + pw + 12.0,
            left + pw + 36.0,
            left + pw + 42.0,
            ly + 4.0,
            escape(&ser.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// The marker of colour `i` at (`cx`, `cy`): circle, square, diamond or
/// triangle, hollow from the fifth colour on.
fn marker(i: usize, cx: f64, cy: f64, color: &str) -> String {
    let fill = if i % 8 < 4 { color } else { "white" };
    let style = format!(r#"fill="{fill}" stroke="{color}" stroke-width="1.5""#);
    match i % 4 {
        0 => format!(r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="3.5" {style}/>"#),
        1 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" {style}/>"#,
            cx - 3.5,
            cy - 3.5
        ),
        2 => format!(
            r#"<polygon points="{cx:.1},{:.1} {:.1},{cy:.1} {cx:.1},{:.1} {:.1},{cy:.1}" {style}/>"#,
            cy - 4.5,
            cx + 4.5,
            cy + 4.5,
            cx - 4.5
        ),
        _ => format!(
            r#"<polygon points="{cx:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" {style}/>"#,
            cy - 4.5,
            cx + 4.0,
            cy + 3.5,
            cx - 4.0,
            cy + 3.5
        ),
    }
}

/// Round ticks covering `[lo, hi]`: about `intervals` steps of 1, 2 or 5
/// times a power of ten, from the last at or below `lo` to the first at
/// or above `hi` (at least two ticks).
pub fn nice_ticks(lo: f64, hi: f64, intervals: usize) -> Vec<f64> {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo, lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let rough = (hi - lo) / intervals.max(1) as f64;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= rough)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor() as i64;
    let last = ((hi / step).ceil() as i64).max(first + 1);
    (first..=last).map(|i| i as f64 * step).collect()
}

/// The x values every series has, sorted, when they are at most 12: ticks
/// that sit on the data points.
fn shared_x(series: &[Series]) -> Option<Vec<f64>> {
    let mut xs: Vec<f64> = series.first()?.points.iter().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let all_share = series.iter().all(|s| {
        s.points
            .iter()
            .all(|p| xs.iter().any(|&x| (x - p.0).abs() < 1e-9))
    });
    (all_share && (2..=12).contains(&xs.len())).then_some(xs)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// For a scenario swept over path loss: delivered fraction against loss,
/// one solid line per mode (measured, first flow) and a dashed one for its
/// theory. `None` when the scenario does not sweep path loss.
pub fn delivery_chart(report: &crate::report::ScenarioReport) -> Option<String> {
    sweep_chart(
        report,
        "delivered vs per-path loss",
        "delivered (%)",
        |f| 100.0 * (1.0 - f.loss_ratio),
        |f| {
            let (lo, hi) = f.loss_ratio_range;
            (100.0 * (1.0 - hi), 100.0 * (1.0 - lo))
        },
        |f| f.theory_delivery.map(|t| 100.0 * t),
    )
}

/// TCP goodput (Mbit/s) against per-path loss, one line per mode.
pub fn goodput_chart(report: &crate::report::ScenarioReport) -> Option<String> {
    sweep_chart(
        report,
        "TCP goodput vs per-path loss",
        "goodput (Mbit/s)",
        |f| f.goodput_mbps,
        |f| f.goodput_range_mbps,
        |_| None,
    )
}

/// A chart over a path-loss sweep: `value` of each mode's first flow per
/// loss (solid), and `theory` where it has one (dashed).
fn sweep_chart(
    report: &crate::report::ScenarioReport,
    what: &str,
    y_label: &str,
    value: impl Fn(&crate::report::FlowSummary) -> f64,
    spread: impl Fn(&crate::report::FlowSummary) -> (f64, f64),
    theory: impl Fn(&crate::report::FlowSummary) -> Option<f64>,
) -> Option<String> {
    if report.variants.iter().all(|v| v.path_loss.is_none()) {
        return None;
    }
    let mut modes: Vec<Option<String>> = Vec::new();
    for v in &report.variants {
        if !modes.contains(&v.mode) {
            modes.push(v.mode.clone());
        }
    }
    let mut series = Vec::new();
    let (mut lo, mut hi, mut widest): (f64, f64, f64) = (f64::MAX, f64::MIN, 0.0);
    for (ci, m) in modes.iter().enumerate() {
        let vs: Vec<_> = report.variants.iter().filter(|v| &v.mode == m).collect();
        let x = |v: &&crate::report::VariantReport| 100.0 * v.path_loss.unwrap_or(0.0);
        let measured: Vec<(f64, f64)> = vs.iter().map(|v| (x(v), value(&v.summary[0]))).collect();
        // The runs' lowest and highest, drawn as bars when there are runs
        // to differ.
        let runs_spread: Vec<(f64, f64)> = if vs.iter().all(|v| v.summary[0].runs > 1) {
            vs.iter().map(|v| spread(&v.summary[0])).collect()
        } else {
            Vec::new()
        };
        let theory: Vec<(f64, f64)> = vs
            .iter()
            .filter_map(|v| theory(&v.summary[0]).map(|t| (x(v), t)))
            .collect();
        for &(px, py) in measured.iter().chain(&theory) {
            lo = lo.min(py);
            hi = hi.max(py);
            widest = widest.max(px);
        }
        let label = m.clone().unwrap_or_else(|| vs[0].summary[0].mode.clone());
        for &(l, h) in &runs_spread {
            lo = lo.min(l);
            hi = hi.max(h);
        }
        series.push(Series {
            label: label.clone(),
            points: measured,
            dashed: false,
            scatter: false,
            color: ci,
            spread: runs_spread,
        });
        if !theory.is_empty() {
            series.push(Series {
                label: format!("{label} theory"),
                points: theory,
                dashed: true,
                scatter: false,
                color: ci,
                spread: Vec::new(),
            });
        }
    }
    // Percent charts start at a round floor; others at zero.
    let (y0, y1) = if y_label.contains('%') {
        (((lo - 5.0) / 10.0).floor().max(0.0) * 10.0, 100.0)
    } else {
        (0.0, (hi * 1.1).max(1e-9))
    };
    Some(line_chart(
        &format!("{}: {what}", report.scenario),
        "loss on each path (%); bars: lowest and highest run",
        y_label,
        (0.0, widest.max(1.0)),
        (y0, y1),
        &series,
    ))
}

/// One bar of a bar chart: a value, and the lowest and highest of the
/// runs it sums up (drawn as a whisker) when there were several.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub range: Option<(f64, f64)>,
}

impl Bar {
    /// A bar without a spread.
    pub fn new(label: impl Into<String>, value: f64) -> Self {
        Bar {
            label: label.into(),
            value,
            range: None,
        }
    }
}

/// A value from elsewhere (a paper's figure) drawn across a chart as a
/// dashed line with its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub label: String,
    pub value: f64,
}

/// Horizontal bars with a value axis of round ticks, every label at one
/// precision; a whisker per bar over its runs' range, and the references
/// (a paper's values) as dashed lines across the bars.
pub fn bar_chart(title: &str, unit: &str, bars: &[Bar], references: &[Reference]) -> String {
    let (w, row, left) = (640.0, 26.0, 230.0);
    let top = 30.0 + if references.is_empty() { 0.0 } else { 16.0 };
    let axis_y = top + row * bars.len() as f64;
    let h = axis_y + 40.0;
    let largest = bars
        .iter()
        .map(|b| b.range.map_or(b.value, |r| r.1.max(b.value)))
        .chain(references.iter().map(|r| r.value))
        .fold(0.0, f64::max);
    let ticks = nice_ticks(0.0, largest.max(1e-9), 4);
    let max = *ticks.last().expect("at least two");
    let decimals = if max >= 100.0 {
        0
    } else if max >= 10.0 {
        1
    } else {
        2
    };
    let span = w - left - 90.0;
    let x_of = |v: f64| left + span * (v / max).max(0.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        w / 2.0,
        escape(title)
    );
    for &t in &ticks {
        let x = x_of(t);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{axis_y}\" stroke=\"#ddd\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            top - 4.0,
            axis_y + 16.0,
            trim(t)
        );
    }
    let _ = write!(
        svg,
        "<line x1=\"{left}\" y1=\"{axis_y}\" x2=\"{}\" y2=\"{axis_y}\" stroke=\"#333\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        left + span,
        left + span / 2.0,
        axis_y + 34.0,
        escape(unit)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let end = x_of(b.value);
        let label_x = b.range.map_or(end, |r| x_of(r.1).max(end)) + 6.0;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{}\"/>",
            left - 6.0,
            y + 14.0,
            escape(&b.label),
            end - left,
            row - 8.0,
            PALETTE[i % PALETTE.len()],
        );
        if let Some((lo, hi)) = b.range {
            let (x1, x2, ym) = (x_of(lo), x_of(hi), y + (row - 8.0) / 2.0);
            let _ = write!(
                svg,
                "<path d=\"M{x1:.1},{ym:.1}H{x2:.1}M{x1:.1},{:.1}V{:.1}M{x2:.1},{:.1}V{:.1}\" stroke=\"#222\" fill=\"none\"/>",
                ym - 5.0,
                ym + 5.0,
                ym - 5.0,
                ym + 5.0
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{label_x:.1}\" y=\"{}\">{:.*} {}</text>",
            y + 14.0,
            decimals,
            b.value,
            escape(unit)
        );
    }
    for (k, r) in references.iter().enumerate() {
        let x = x_of(r.value);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{axis_y}\" stroke=\"#000\" stroke-dasharray=\"5,4\"/>\
             <text x=\"{x:.1}\" y=\"{}\" text-anchor=\"{}\" font-size=\"11\">{}</text>",
            top - 14.0,
            top - 18.0,
            // Two references side by side: one label to the left of its
            // line, the next to the right.
            if k % 2 == 0 { "end" } else { "start" },
            escape(&r.label)
        );
    }
    svg + "</svg>"
}

/// An HTML table from a header row and rows of cells (already text).
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in header {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", escape(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// The page around the sections.
pub fn page(title: &str, intro: &str, sections: &[String]) -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{t}</title><style>\
body{{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}}\
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #bbb;padding:4px 8px;text-align:right}}\
th{{background:#f0f0f0}}td:first-child,th:first-child{{text-align:left}}h2{{margin-top:2em}}\
.note{{color:#555}}.limits{{border:1px solid #c9b458;background:#fdf8e4;padding:6px 10px;margin:1em 0;font-size:90%}}</style></head><body><h1>{t}</h1><p>{i}</p>{s}</body></html>\n",
        t = escape(title),
        i = intro,
        s = sections.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scatter_series_has_markers_and_no_line() {
        let series = |scatter| Series {
            label: "prices".into(),
            points: vec![(1.0, 2.0), (2.0, 5.0), (3.0, 4.0)],
            dashed: false,
            scatter,
            color: 0,
            spread: Vec::new(),
        };
        let line = line_chart("t", "x", "y", (0.0, 4.0), (0.0, 6.0), &[series(false)]);
        let dots = line_chart("t", "x", "y", (0.0, 4.0), (0.0, 6.0), &[series(true)]);
        assert_eq!(line.matches("<polyline").count(), 1);
        assert_eq!(dots.matches("<polyline").count(), 0);
        // Three markers and one in the legend.
        assert_eq!(dots.matches("<circle").count(), 4, "{dots}");
    }

    #[test]
    fn bar_chart_has_one_bar_per_value_scaled_to_the_largest() {
        let svg = bar_chart(
            "t<",
            "KB/s",
            &[Bar::new("a", 10.0), Bar::new("b&", 20.0)],
            &[],
        );
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("t&lt;") && svg.contains("b&amp;"));
        assert!(svg.contains("width=\"160.0\"") && svg.contains("width=\"320.0\""));
        // A value axis, and the labels at one precision.
        assert!(svg.contains(">15<") && svg.contains(">20.0 KB/s<"), "{svg}");
        let uneven = bar_chart(
            "t",
            "KB/s",
            &[Bar::new("a", 23.577), Bar::new("b", 25.96)],
            &[],
        );
        assert!(
            uneven.contains(">23.6 KB/s<") && uneven.contains(">26.0 KB/s<"),
            "{uneven}"
        );
        // A whisker over the runs and a paper's value as a dashed line;
        // the axis reaches the largest of them.
        let spread = Bar {
            range: Some((5.0, 40.0)),
            ..Bar::new("c", 10.0)
        };
        let paper = Reference {
            label: "paper: 110".into(),
            value: 110.0,
        };
        let svg = bar_chart("t", "KB/s", &[spread], &[paper]);
        assert_eq!(svg.matches("<path").count(), 1, "{svg}");
        assert!(svg.contains("stroke-dasharray") && svg.contains(">paper: 110<"));
        assert!(svg.contains(">150<") || svg.contains(">120<"), "{svg}");
    }

    #[test]
    fn chart_has_one_polyline_per_series_and_escapes_text() {
        let series = vec![
            Series {
                label: "mirror:2 <measured>".into(),
                points: vec![(0.0, 1.0), (0.3, 0.9)],
                dashed: false,
                scatter: false,
                color: 0,
                spread: Vec::new(),
            },
            Series {
                label: "theory".into(),
                points: vec![(0.0, 1.0), (0.3, 0.91)],
                dashed: true,
                scatter: false,
                color: 0,
                spread: Vec::new(),
            },
        ];
        let svg = line_chart("t", "x", "y", (0.0, 0.3), (0.6, 1.0), &series);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;measured&gt;"));
        assert!(svg.contains("stroke-dasharray"));
        // Measured points get markers, theory none.
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        for (lo, hi) in [
            (0.0, 20.9),
            (0.6, 1.0),
            (3.2, 3.3),
            (-4.0, 17.0),
            (0.0, 0.0),
        ] {
            let t = nice_ticks(lo, hi, 5);
            assert!(t.len() >= 2, "{lo} {hi}: {t:?}");
            assert!(
                t[0] <= lo && *t.last().unwrap() >= hi.max(lo),
                "{lo} {hi}: {t:?}"
            );
            let step = t[1] - t[0];
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .any(|m| (m - mantissa).abs() < 1e-9),
                "{lo} {hi}: step {step}"
            );
            assert!(t.len() <= 12, "{lo} {hi}: {t:?}");
        }
        assert_eq!(nice_ticks(0.0, 20.9, 5), [0.0, 5.0, 10.0, 15.0, 20.0, 25.0]);
    }

    #[test]
    fn x_ticks_sit_on_the_points_the_series_share() {
        let series = vec![Series {
            label: "a".into(),
            points: vec![
                (0.0, 1.0),
                (5.0, 2.0),
                (10.0, 2.5),
                (20.0, 3.0),
                (30.0, 3.1),
            ],
            dashed: false,
            scatter: false,
            color: 0,
            spread: Vec::new(),
        }];
        let svg = line_chart("t", "x", "y", (0.0, 30.0), (0.0, 4.181), &series);
        for label in [">0<", ">5<", ">10<", ">20<", ">30<"] {
            assert!(svg.contains(label), "no tick {label}");
        }
        // No tick at an unround value such as 4.181 / 5.
        assert!(!svg.contains(">0.836<") && !svg.contains(">4.181<"));
    }
}
