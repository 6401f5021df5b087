//! The `ctxhost run --plot` picture: context tokens per model call, one panel per engine, side
//! by side on one y scale, with the threshold, the window, the no-engine baseline and a mark at
//! each compression. Plain SVG, written by hand: no fonts or rendering crates needed.

use std::fmt::Write;

/// One engine's replay, as the plot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    pub engine: String,
    /// Context tokens sent at model call 1..=n.
    pub tokens_per_call: Vec<u64>,
    /// Tokens with no engine at the same calls.
    pub baseline_per_call: Vec<u64>,
    pub compressions: Vec<Compression>,
    /// Tokens at which the engine compresses.
    pub threshold: u64,
    /// The model's window.
    pub context_length: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The model call it ran before (1-based).
    pub call: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

const PANEL_WIDTH: f64 = 860.0;
const HEIGHT: f64 = 520.0;
const TITLE_HEIGHT: f64 = 44.0;
const LEGEND_HEIGHT: f64 = 34.0;
const MARGIN_LEFT: f64 = 78.0;
const MARGIN_RIGHT: f64 = 24.0;
const PANEL_TOP: f64 = 56.0;
const MARGIN_BOTTOM: f64 = 52.0;
const ENGINE_COLORS: &[&str] = &["#1f5fbf", "#b5411d", "#2e7d32", "#6a3d9a"];
const FONT: &str = "DejaVu Sans, Arial, sans-serif";

/// The whole picture as an SVG document.
pub fn svg(title: &str, series: &[Series]) -> String {
    let panels = series.len().max(1);
    let width = PANEL_WIDTH * panels as f64;
    let total_height = TITLE_HEIGHT + HEIGHT + LEGEND_HEIGHT;
    let y_max = nice_ceiling(y_extent(series));
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#,
        w = fmt(width),
        h = fmt(total_height)
    );
    let _ = write!(
        out,
        r##"<rect width="100%" height="100%" fill="#ffffff"/><text x="{}" y="30" font-size="20" font-weight="bold" text-anchor="middle" fill="#222">{}</text>"##,
        fmt(width / 2.0),
        escape(title)
    );
    if series.is_empty() {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="16" text-anchor="middle" fill="#555">no engine was replayed</text>"##,
            fmt(width / 2.0),
            fmt(TITLE_HEIGHT + HEIGHT / 2.0)
        );
    }
    for (index, one) in series.iter().enumerate() {
        let color = ENGINE_COLORS[index % ENGINE_COLORS.len()];
        panel(&mut out, one, PANEL_WIDTH * index as f64, y_max, color);
    }
    legend(&mut out, width, TITLE_HEIGHT + HEIGHT);
    out.push_str("</svg>\n");
    out
}

/// The y range: the engine lines, the threshold and the window; the baseline only as far as
/// twice the window (beyond that it is clipped, and a note gives its peak).
fn y_extent(series: &[Series]) -> u64 {
    series
        .iter()
        .map(|s| {
            let engine = s.tokens_per_call.iter().copied().max().unwrap_or(0);
            let baseline = s.baseline_per_call.iter().copied().max().unwrap_or(0);
            let cap = s.context_length.max(engine).saturating_mul(2);
            engine
                .max(s.threshold)
                .max(s.context_length)
                .max(baseline.min(cap))
        })
        .max()
        .unwrap_or(0)
        .max(1)
}

struct Frame {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    calls: usize,
    y_max: f64,
}

impl Frame {
    fn x(&self, call: usize) -> f64 {
        if self.calls <= 1 {
            return (self.left + self.right) / 2.0;
        }
        self.left
            + (call.saturating_sub(1)) as f64 / (self.calls - 1) as f64 * (self.right - self.left)
    }

    fn y(&self, tokens: u64) -> f64 {
        let clamped = (tokens as f64).min(self.y_max);
        self.bottom - clamped / self.y_max * (self.bottom - self.top)
    }
}

fn panel(out: &mut String, series: &Series, x0: f64, y_max: u64, color: &str) {
    let frame = Frame {
        left: x0 + MARGIN_LEFT,
        right: x0 + PANEL_WIDTH - MARGIN_RIGHT,
        top: TITLE_HEIGHT + PANEL_TOP,
        bottom: TITLE_HEIGHT + HEIGHT - MARGIN_BOTTOM,
        calls: series.tokens_per_call.len(),
        y_max: y_max as f64,
    };
    let _ = write!(
        out,
        r#"<g class="panel" data-engine="{}">"#,
        escape(&series.engine)
    );
    // Panel title and subtitle.
    let peak = series.tokens_per_call.iter().copied().max().unwrap_or(0);
    let last = series.tokens_per_call.last().copied().unwrap_or(0);
    let _ = write!(
        out,
        r##"<text x="{x}" y="{y}" font-size="17" font-weight="bold" fill="{color}">{name}</text><text x="{x}" y="{y2}" font-size="13" fill="#444">{n} compression{s} · peak {peak} · final {last} tokens</text>"##,
        x = fmt(frame.left),
        y = fmt(TITLE_HEIGHT + 18.0),
        y2 = fmt(TITLE_HEIGHT + 38.0),
        name = escape(&series.engine),
        n = series.compressions.len(),
        s = if series.compressions.len() == 1 {
            ""
        } else {
            "s"
        },
        peak = short(peak),
        last = short(last),
    );
    axes(out, &frame);
    if frame.calls == 0 {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="15" text-anchor="middle" fill="#777">no model calls</text></g>"##,
            fmt((frame.left + frame.right) / 2.0),
            fmt((frame.top + frame.bottom) / 2.0)
        );
        return;
    }
    // Window and threshold.
    for (tokens, label, stroke, dash) in [
        (series.context_length, "window", "#999999", "2,4"),
        (series.threshold, "threshold", "#e07b00", "8,5"),
    ] {
        if tokens == 0 || tokens > y_max {
            continue;
        }
        let y = frame.y(tokens);
        let _ = write!(
            out,
            r##"<line class="{label}" x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="{stroke}" stroke-width="1.5" stroke-dasharray="{dash}"/><text x="{tx}" y="{ty}" font-size="12" fill="{stroke}">{label} {value}</text>"##,
            l = fmt(frame.left),
            r = fmt(frame.right),
            y = fmt(y),
            tx = fmt(frame.left + 6.0),
            ty = fmt(y - 5.0),
            value = short(tokens),
        );
    }
    // The no-engine baseline, clipped at the top of the frame.
    polyline(
        out,
        &frame,
        &series.baseline_per_call,
        "#9e9e9e",
        1.5,
        Some("5,4"),
        "baseline",
    );
    let baseline_peak = series.baseline_per_call.iter().copied().max().unwrap_or(0);
    if baseline_peak > y_max {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" font-size="12" fill="#777">no engine reaches {} tokens (clipped)</text>"##,
            fmt(frame.left + 8.0),
            fmt(frame.top + 14.0),
            short(baseline_peak)
        );
    }
    polyline(
        out,
        &frame,
        &series.tokens_per_call,
        color,
        2.2,
        None,
        "context",
    );
    // A drop line and a triangle at each compression.
    for compression in &series.compressions {
        let x = frame.x(compression.call);
        let (top, bottom) = (
            frame.y(compression.tokens_before),
            frame.y(compression.tokens_after),
        );
        let _ = write!(
            out,
            r##"<g class="compression"><line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="#c62828" stroke-width="1.5"/><path d="M{l},{t} L{r},{t} L{x},{tip} Z" fill="#c62828"/><title>compression before call {call}: {before} → {after} tokens</title></g>"##,
            x = fmt(x),
            top = fmt(top),
            bottom = fmt(bottom),
            l = fmt(x - 5.0),
            r = fmt(x + 5.0),
            t = fmt(top - 9.0),
            tip = fmt(top - 1.0),
            call = compression.call,
            before = compression.tokens_before,
            after = compression.tokens_after,
        );
    }
    out.push_str("</g>");
}

fn axes(out: &mut String, frame: &Frame) {
    let _ = write!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#bbbbbb"/>"##,
        fmt(frame.left),
        fmt(frame.top),
        fmt(frame.right - frame.left),
        fmt(frame.bottom - frame.top)
    );
    for tick in ticks(frame.y_max as u64, 6) {
        let y = frame.y(tick);
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#eeeeee"/><text x="{tx}" y="{ty}" font-size="12" text-anchor="end" fill="#444">{label}</text>"##,
            l = fmt(frame.left),
            r = fmt(frame.right),
            y = fmt(y),
            tx = fmt(frame.left - 8.0),
            ty = fmt(y + 4.0),
            label = short(tick),
        );
    }
    if frame.calls > 0 {
        let mut x_ticks = ticks(frame.calls as u64, 7);
        x_ticks.retain(|&t| t >= 1);
        if !x_ticks.contains(&1) {
            x_ticks.insert(0, 1);
        }
        for tick in x_ticks {
            let x = frame.x(tick as usize);
            let _ = write!(
                out,
                r##"<line x1="{x}" y1="{b}" x2="{x}" y2="{b6}" stroke="#888"/><text x="{x}" y="{ty}" font-size="12" text-anchor="middle" fill="#444">{tick}</text>"##,
                x = fmt(x),
                b = fmt(frame.bottom),
                b6 = fmt(frame.bottom + 5.0),
                ty = fmt(frame.bottom + 19.0),
            );
        }
    }
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" font-size="13" text-anchor="middle" fill="#333">model call</text><text transform="translate({},{}) rotate(-90)" font-size="13" text-anchor="middle" fill="#333">context tokens</text>"##,
        fmt((frame.left + frame.right) / 2.0),
        fmt(frame.bottom + 40.0),
        fmt(frame.left - 60.0),
        fmt((frame.top + frame.bottom) / 2.0)
    );
}

fn polyline(
    out: &mut String,
    frame: &Frame,
    values: &[u64],
    stroke: &str,
    width: f64,
    dash: Option<&str>,
    class: &str,
) {
    if values.is_empty() {
        return;
    }
    let mut points = String::with_capacity(values.len() * 14);
    for (index, &tokens) in values.iter().enumerate() {
        let _ = write!(
            points,
            "{},{} ",
            fmt(frame.x(index + 1)),
            fmt(frame.y(tokens))
        );
    }
    let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
    let _ = write!(
        out,
        r#"<polyline class="{class}" points="{}" fill="none" stroke="{stroke}" stroke-width="{}" stroke-linejoin="round"{dash}/>"#,
        points.trim_end(),
        fmt(width)
    );
    if values.len() == 1 {
        let _ = write!(
            out,
            r#"<circle cx="{}" cy="{}" r="3" fill="{stroke}"/>"#,
            fmt(frame.x(1)),
            fmt(frame.y(values[0]))
        );
    }
}

fn legend(out: &mut String, width: f64, y: f64) {
    let items: [(&str, &str); 4] = [
        (
            r##"<line x1="0" y1="0" x2="26" y2="0" stroke="#1f5fbf" stroke-width="2.2"/>"##,
            "context sent with the engine",
        ),
        (
            r##"<line x1="0" y1="0" x2="26" y2="0" stroke="#9e9e9e" stroke-width="1.5" stroke-dasharray="5,4"/>"##,
            "with no engine",
        ),
        (
            r##"<line x1="0" y1="0" x2="26" y2="0" stroke="#e07b00" stroke-width="1.5" stroke-dasharray="8,5"/>"##,
            "threshold",
        ),
        (
            r##"<path d="M8,-6 L18,-6 L13,3 Z" fill="#c62828"/>"##,
            "compression",
        ),
    ];
    let mut x = (width - 720.0).max(0.0) / 2.0 + 20.0;
    for (symbol, label) in items {
        let _ = write!(
            out,
            r##"<g transform="translate({},{})">{symbol}<text x="34" y="4" font-size="13" fill="#333">{label}</text></g>"##,
            fmt(x),
            fmt(y + 16.0)
        );
        x += 60.0 + label.len() as f64 * 7.0;
    }
}

/// Up to about `count` round tick values from 0 to `max`.
fn ticks(max: u64, count: u64) -> Vec<u64> {
    if max == 0 {
        return vec![0];
    }
    let step = nice_step(max as f64 / count as f64);
    (0..).map(|i| i * step).take_while(|&t| t <= max).collect()
}

fn nice_step(raw: f64) -> u64 {
    let raw = raw.max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 2.5 {
        2.5
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    ((nice * magnitude).round() as u64).max(1)
}

/// The smallest round number at or above `value`, for the top of the y axis.
fn nice_ceiling(value: u64) -> u64 {
    let step = nice_step(value as f64 / 6.0);
    value.div_ceil(step).max(1) * step
}

/// `1500` → `1.5K`, `128000` → `128K`, `2000000` → `2M`.
pub fn short(value: u64) -> String {
    let (scaled, unit) = if value >= 1_000_000 {
        (value as f64 / 1_000_000.0, "M")
    } else if value >= 1_000 {
        (value as f64 / 1_000.0, "K")
    } else {
        return value.to_string();
    };
    let text = format!("{scaled:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text}{unit}")
}

fn fmt(value: f64) -> String {
    let text = format!("{value:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_string)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sawtooth(calls: usize) -> Series {
        let mut tokens = Vec::new();
        let mut compressions = Vec::new();
        let mut current = 20_000u64;
        for call in 1..=calls {
            if current > 64_000 {
                compressions.push(Compression {
                    call,
                    tokens_before: current,
                    tokens_after: 20_000,
                });
                current = 20_000;
            }
            tokens.push(current);
            current += 1_500;
        }
        Series {
            engine: "compressor".to_string(),
            baseline_per_call: (1..=calls as u64).map(|c| c * 1_400).collect(),
            tokens_per_call: tokens,
            compressions,
            threshold: 64_000,
            context_length: 128_000,
        }
    }

    #[test]
    fn draws_one_mark_per_compression_and_labels_everything() {
        let series = sawtooth(300);
        let svg = svg("a <session> & more", std::slice::from_ref(&series));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(
            svg.matches("class=\"compression\"").count(),
            series.compressions.len()
        );
        assert!(svg.contains("threshold 64K"));
        assert!(svg.contains("a &lt;session&gt; &amp; more"));
        assert!(svg.contains("no engine reaches 420K tokens (clipped)"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
    }

    #[test]
    fn two_engines_side_by_side() {
        let mut other = sawtooth(120);
        other.engine = "window".to_string();
        let svg = svg("compare", &[sawtooth(120), other]);
        assert_eq!(svg.matches("class=\"panel\"").count(), 2);
        assert!(svg.contains(">window<") && svg.contains(">compressor<"));
    }

    #[test]
    fn edge_cases_do_not_panic() {
        let empty = Series {
            engine: "e".to_string(),
            tokens_per_call: vec![],
            baseline_per_call: vec![],
            compressions: vec![],
            threshold: 0,
            context_length: 0,
        };
        assert!(svg("t", &[empty]).contains("no model calls"));
        let one = Series {
            tokens_per_call: vec![0],
            baseline_per_call: vec![0],
            ..sawtooth(0)
        };
        assert!(svg("t", &[one]).contains("<circle"));
        assert!(svg("t", &[]).contains("no engine was replayed"));
        let huge = Series {
            tokens_per_call: vec![5_000_000; 3000],
            baseline_per_call: vec![9_000_000; 3000],
            ..sawtooth(0)
        };
        assert!(svg("t", &[huge]).contains("M"));
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(999), "999");
        assert_eq!(short(1500), "1.5K");
        assert_eq!(short(128_000), "128K");
        assert_eq!(short(2_000_000), "2M");
        assert_eq!(
            ticks(128_000, 6),
            vec![0, 25_000, 50_000, 75_000, 100_000, 125_000]
        );
        assert_eq!(nice_ceiling(130_000), 150_000);
    }
}
