//! The `ctxhost quality --plot` picture: the share of planted facts the engine's output still
//! shows after each round, one curve per fact kind, with the retrieval agent's overall curve
//! when the engine has tools. Plain SVG in the style of `ctxhost run --plot` (its helpers,
//! fonts and colours), the same bytes for the same report.

use std::fmt::Write as _;

use ctxhost_quality::{FactKind, QualityReport};

use super::plot::{escape, fmt, FONT, MUTED_COLOR, TEXT_COLOR};

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 84.0;
const RIGHT: f64 = 180.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 60.0;

const KIND_COLORS: [(FactKind, &str); 9] = [
    (FactKind::Rule, "#c62828"),
    (FactKind::Constraint, "#e65100"),
    (FactKind::Fact, "#1f5fbf"),
    (FactKind::Goal, "#2e7d32"),
    (FactKind::Preference, "#6a3d9a"),
    (FactKind::Prohibition, "#ad1457"),
    (FactKind::Decision, "#5d4037"),
    (FactKind::Question, "#9e9d24"),
    (FactKind::Artifact, "#455a64"),
];
const TOOLS_COLOR: &str = "#00838f";

/// The picture as a standalone SVG document.
pub fn svg(report: &QualityReport) -> String {
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let rounds = report.rounds.len().max(1);
    let x = |round: usize| LEFT + plot_width * (round as f64 - 0.5) / rounds as f64;
    let y = |share: f64| TOP + plot_height * (1.0 - share);
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}"><rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>"##,
        w = fmt(WIDTH),
        h = fmt(HEIGHT)
    );
    let title = format!(
        "ctxhost quality: {} at {}, {} facts ({} style)",
        report.engine,
        report.budget,
        report.facts.len(),
        report.style
    );
    let _ = write!(
        out,
        r##"<text x="{}" y="30" font-size="20" font-weight="bold" text-anchor="middle" fill="#222222">{}</text>"##,
        fmt(WIDTH / 2.0),
        escape(&title)
    );
    let _ = write!(
        out,
        r#"<text x="{}" y="52" font-size="13" text-anchor="middle" fill="{MUTED_COLOR}">share of planted facts the output shows after each round (budget met in {} of {} rounds)</text>"#,
        fmt(WIDTH / 2.0),
        report.outcome.budgets_met,
        report.rounds.len()
    );
    // Axes: 0 to 100% in steps of 25, one tick per round.
    for step in 0..=4 {
        let share = step as f64 / 4.0;
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#e0e0e0"/><text x="{tx}" y="{ty}" font-size="12" text-anchor="end" fill="{TEXT_COLOR}">{p}%</text>"##,
            l = fmt(LEFT),
            r = fmt(LEFT + plot_width),
            y = fmt(y(share)),
            tx = fmt(LEFT - 8.0),
            ty = fmt(y(share) + 4.0),
            p = step * 25
        );
    }
    for round in 1..=report.rounds.len() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="{TEXT_COLOR}">{round}</text>"#,
            fmt(x(round)),
            fmt(TOP + plot_height + 18.0)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="13" text-anchor="middle" fill="{TEXT_COLOR}">round</text>"#,
        fmt(LEFT + plot_width / 2.0),
        fmt(HEIGHT - 16.0)
    );
    let kinds = report.kinds();
    let mut curves: Vec<(String, &str, Vec<f64>, bool)> = KIND_COLORS
        .iter()
        .filter(|(kind, _)| kinds.contains(kind))
        .map(|&(kind, color)| {
            let shares = report
                .rounds
                .iter()
                .map(|r| {
                    r.survival
                        .iter()
                        .find(|s| s.kind == kind)
                        .map_or(1.0, |s| s.score.share)
                })
                .collect();
            (kind.name().to_string(), color, shares, false)
        })
        .collect();
    if report.rounds.iter().any(|r| r.retrieval.is_some()) {
        let shares = report
            .rounds
            .iter()
            .map(|r| r.retrieval.as_ref().map_or(0.0, |t| t.overall.share))
            .collect();
        curves.push(("with tools".to_string(), TOOLS_COLOR, shares, true));
    }
    for (index, (name, color, shares, dashed)) in curves.iter().enumerate() {
        // Curves that coincide would hide each other: each is nudged by a pixel or two.
        let nudge = index as f64 * 1.5 - 3.0;
        let points: Vec<String> = shares
            .iter()
            .enumerate()
            .map(|(i, &s)| format!("{},{}", fmt(x(i + 1)), fmt(y(s) + nudge)))
            .collect();
        let dash = if *dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = write!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5"{dash}/>"#,
            points.join(" ")
        );
        for point in &points {
            let (px, py) = point.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(
                out,
                r#"<circle cx="{px}" cy="{py}" r="3.5" fill="{color}"/>"#
            );
        }
        let line_y = TOP + 10.0 + index as f64 * 22.0;
        let ly = fmt(line_y);
        let lx = LEFT + plot_width + 20.0;
        let last = shares.last().copied().unwrap_or(0.0);
        let _ = write!(
            out,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2.5"{dash}/><text x="{}" y="{}" font-size="13" fill="{TEXT_COLOR}">{} {:.0}%</text>"#,
            fmt(lx),
            fmt(lx + 24.0),
            fmt(lx + 30.0),
            fmt(line_y + 4.0),
            escape(name),
            last * 100.0
        );
    }
    out.push_str("</svg>\n");
    out
}
