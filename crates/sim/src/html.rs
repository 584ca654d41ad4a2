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
    // Grid and ticks: five steps on each axis.
    for i in 0..=5 {
        let fx = x.0 + (x.1 - x.0) * i as f64 / 5.0;
        let fy = y.0 + (y.1 - y.0) * i as f64 / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#ddd"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
            sx(fx),
            top,
            top + ph,
            top + ph + 18.0,
            trim(fx)
        );
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
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
            pts.join(" ")
        );
        if !ser.dashed {
            for p in &pts {
                let (cx, cy) = p.split_once(',').expect("x,y");
                let _ = write!(s, r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>"#);
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
        series.push(Series {
            label: label.clone(),
            points: measured,
            dashed: false,
            color: ci,
            spread: Vec::new(),
        });
        if !theory.is_empty() {
            series.push(Series {
                label: format!("{label} theory"),
                points: theory,
                dashed: true,
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
        "loss on each path (%)",
        y_label,
        (0.0, widest.max(1.0)),
        (y0, y1),
        &series,
    ))
}

/// Horizontal bars, one per label, with the value printed beside each.
pub fn bar_chart(title: &str, unit: &str, bars: &[(String, f64)]) -> String {
    let (w, row, left) = (640.0, 26.0, 230.0);
    let h = 40.0 + row * bars.len() as f64;
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9);
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\
         <text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
        w / 2.0,
        escape(title)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let y = 30.0 + row * i as f64;
        let len = (w - left - 90.0) * (v / max).max(0.0);
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{left}\" y=\"{y}\" width=\"{len:.1}\" height=\"{}\" fill=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{}\">{} {}</text>",
            left - 6.0,
            y + 14.0,
            escape(label),
            row - 8.0,
            PALETTE[i % PALETTE.len()],
            left + len + 6.0,
            y + 14.0,
            trim(*v),
            escape(unit)
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
.note{{color:#555}}</style></head><body><h1>{t}</h1><p>{i}</p>{s}</body></html>\n",
        t = escape(title),
        i = intro,
        s = sections.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_chart_has_one_bar_per_value_scaled_to_the_largest() {
        let svg = bar_chart("t<", "KB/s", &[("a".into(), 10.0), ("b&".into(), 20.0)]);
        assert_eq!(svg.matches("<rect").count(), 2);
        assert!(svg.contains("t&lt;") && svg.contains("b&amp;"));
        assert!(svg.contains("width=\"160.0\"") && svg.contains("width=\"320.0\""));
    }

    #[test]
    fn chart_has_one_polyline_per_series_and_escapes_text() {
        let series = vec![
            Series {
                label: "mirror:2 <measured>".into(),
                points: vec![(0.0, 1.0), (0.3, 0.9)],
                dashed: false,
                color: 0,
                spread: Vec::new(),
            },
            Series {
                label: "theory".into(),
                points: vec![(0.0, 1.0), (0.3, 0.91)],
                dashed: true,
                color: 0,
                spread: Vec::new(),
            },
        ];
        let svg = line_chart("t", "x", "y", (0.0, 0.3), (0.6, 1.0), &series);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("&lt;measured&gt;"));
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
