//! The `ctxhost run --plot` picture: context tokens per model call, one panel per engine, side
//! by side on one y scale, with the threshold, the window, the no-engine baseline and a mark at
//! each compression; under each panel, when the replay was priced, the dollars spent so far
//! with the engine and with no engine. Plain SVG 1.1, written by hand: no fonts or rendering crates needed, and
//! the same input always gives the same bytes.

use std::fmt::Write;

/// One engine's replay, as the plot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The engine's name, e.g. `compressor`; the panel title.
    pub engine: String,
    /// Context tokens sent at model call 1..=n.
    pub tokens_per_call: Vec<u64>,
    /// Tokens with no engine at the same calls (same length).
    pub baseline_per_call: Vec<u64>,
    /// The compressions, each at the call it ran before.
    pub compressions: Vec<Compression>,
    /// Tokens at which the engine compresses (0: none).
    pub threshold: u64,
    /// The model's window (0: unknown).
    pub context_length: u64,
    /// Dollars spent up to each call, when the replay was priced.
    pub cost: Option<CostLines>,
}

/// Cumulative cost per call in millionths of a dollar, with the engine and with no engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostLines {
    pub engine: Vec<u64>,
    pub no_engine: Vec<u64>,
}

/// One compression: at which call, and the context's size before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// The model call it ran before (1-based).
    pub call: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

const PANEL_WIDTH: f64 = 900.0;
const TITLE_HEIGHT: f64 = 42.0;
const HEADER_HEIGHT: f64 = 50.0;
const PLOT_HEIGHT: f64 = 350.0;
const AXIS_HEIGHT: f64 = 50.0;
const LEGEND_HEIGHT: f64 = 34.0;
/// The dollars strip under each panel, when the replay was priced.
const COST_GAP: f64 = 16.0;
const COST_PLOT_HEIGHT: f64 = 170.0;
const MARGIN_LEFT: f64 = 84.0;
const MARGIN_RIGHT: f64 = 112.0;
pub(super) const FONT: &str = "DejaVu Sans, Arial, sans-serif";

const ENGINE_COLORS: &[&str] = &["#1f5fbf", "#2e7d32", "#6a3d9a", "#00838f"];
const BASELINE_COLOR: &str = "#8a8a8a";
const THRESHOLD_COLOR: &str = "#e65100";
const WINDOW_COLOR: &str = "#8c8c8c";
const MARK_COLOR: &str = "#c62828";
pub(super) const TEXT_COLOR: &str = "#333333";
pub(super) const MUTED_COLOR: &str = "#666666";

/// The whole picture as a standalone SVG document: the title, one panel per series side by
/// side on a shared y scale, and a legend.
pub fn svg(title: &str, series: &[Series]) -> String {
    let panels = series.len().max(1);
    let width = PANEL_WIDTH * panels as f64;
    let priced = series.iter().any(|s| s.cost.is_some());
    let cost_height = if priced {
        COST_GAP + COST_PLOT_HEIGHT + AXIS_HEIGHT
    } else {
        0.0
    };
    let height =
        TITLE_HEIGHT + HEADER_HEIGHT + PLOT_HEIGHT + AXIS_HEIGHT + cost_height + LEGEND_HEIGHT;
    let y_max = y_max(series);
    let mut out = String::with_capacity(8_192 + calls_in(series) * 40);
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}">"#,
        w = fmt(width),
        h = fmt(height)
    );
    let _ = write!(
        out,
        r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/><text x="{x}" y="29" font-size="20" font-weight="bold" text-anchor="middle" fill="#222222">{title}</text>"##,
        w = fmt(width),
        h = fmt(height),
        x = fmt(width / 2.0),
        title = escape(title)
    );
    if series.is_empty() {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" font-size="16" text-anchor="middle" fill="{MUTED_COLOR}">no engine was replayed</text>"#,
            fmt(width / 2.0),
            fmt(TITLE_HEIGHT + HEADER_HEIGHT + PLOT_HEIGHT / 2.0)
        );
    }
    for (index, one) in series.iter().enumerate() {
        panel(&mut out, one, index, y_max);
    }
    let dollars_max = series
        .iter()
        .filter_map(|s| s.cost.as_ref())
        .flat_map(|c| c.engine.iter().chain(&c.no_engine))
        .copied()
        .max()
        .unwrap_or(0);
    for (index, one) in series.iter().enumerate() {
        if let Some(cost) = &one.cost {
            cost_panel(
                &mut out,
                cost,
                index,
                nice_ceiling((dollars_max as f64 * 1.08).max(100.0)),
            );
        }
    }
    legend(&mut out, series, width, height - LEGEND_HEIGHT / 2.0);
    out.push_str("</svg>\n");
    out
}

fn calls_in(series: &[Series]) -> usize {
    series.iter().map(|s| s.tokens_per_call.len()).sum()
}

fn engine_color(index: usize) -> &'static str {
    ENGINE_COLORS[index % ENGINE_COLORS.len()]
}

/// The top of the shared y axis. It always shows the engine lines, the compressions and the
/// thresholds; the window if it is not far above them (at most 3×), and the no-engine baseline
/// if it is not far above all that (at most 1.25×); beyond that the baseline is clipped and
/// the panel says how high it went.
fn y_max(series: &[Series]) -> u64 {
    let core = series
        .iter()
        .map(|s| {
            let engine = s.tokens_per_call.iter().copied().max().unwrap_or(0);
            let before = s.compressions.iter().map(|c| c.tokens_before).max();
            engine.max(before.unwrap_or(0)).max(s.threshold)
        })
        .max()
        .unwrap_or(0) as f64;
    let mut top = core;
    for s in series {
        let window = s.context_length as f64;
        if s.context_length > 0 && (core == 0.0 || window <= 3.0 * core) {
            top = top.max(window);
        }
    }
    let baseline = series
        .iter()
        .map(|s| s.baseline_per_call.iter().copied().max().unwrap_or(0))
        .max()
        .unwrap_or(0) as f64;
    if top == 0.0 || baseline <= 1.25 * top {
        top = top.max(baseline);
    }
    nice_ceiling((top * 1.08).max(1_000.0))
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
    /// The x of a 1-based call; calls outside 1..=n are kept on the frame.
    fn x(&self, call: usize) -> f64 {
        if self.calls <= 1 {
            return (self.left + self.right) / 2.0;
        }
        let call = call.clamp(1, self.calls);
        self.left + (call - 1) as f64 / (self.calls - 1) as f64 * (self.right - self.left)
    }

    /// The y of a token count, unclipped (the clip path cuts what is above the frame).
    fn y(&self, tokens: u64) -> f64 {
        let above = (self.bottom - self.top) * 0.5;
        let raw = self.bottom - tokens as f64 / self.y_max * (self.bottom - self.top);
        raw.max(self.top - above)
    }

    /// The y of a token count, kept inside the frame.
    fn y_in(&self, tokens: u64) -> f64 {
        self.y(tokens).max(self.top)
    }
}

fn panel(out: &mut String, series: &Series, index: usize, y_max: u64) {
    let x0 = PANEL_WIDTH * index as f64;
    let color = engine_color(index);
    let frame = Frame {
        left: x0 + MARGIN_LEFT,
        right: x0 + PANEL_WIDTH - MARGIN_RIGHT,
        top: TITLE_HEIGHT + HEADER_HEIGHT,
        bottom: TITLE_HEIGHT + HEADER_HEIGHT + PLOT_HEIGHT,
        calls: series.tokens_per_call.len(),
        y_max: y_max as f64,
    };
    let clip = format!("plot-area-{index}");
    let _ = write!(
        out,
        r#"<g class="panel" data-engine="{name}"><defs><clipPath id="{clip}"><rect x="{x}" y="{y}" width="{w}" height="{h}"/></clipPath></defs>"#,
        name = escape(&series.engine),
        x = fmt(frame.left),
        y = fmt(frame.top),
        w = fmt(frame.right - frame.left),
        h = fmt(frame.bottom - frame.top),
    );
    header(out, series, &frame, color, y_max);
    axes(out, &frame);
    if frame.calls == 0 {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" font-size="16" text-anchor="middle" fill="{MUTED_COLOR}">no model calls</text>"#,
            fmt((frame.left + frame.right) / 2.0),
            fmt((frame.top + frame.bottom) / 2.0)
        );
        frame_border(out, &frame);
        out.push_str("</g>");
        return;
    }
    levels(out, series, &frame, y_max);
    let baseline_len = series.baseline_per_call.len().min(frame.calls);
    polyline(
        out,
        &frame,
        &series.baseline_per_call[..baseline_len],
        BASELINE_COLOR,
        1.4,
        Some("6,4"),
        "baseline",
        &clip,
    );
    polyline(
        out,
        &frame,
        &series.tokens_per_call,
        color,
        2.2,
        None,
        "context",
        &clip,
    );
    for compression in &series.compressions {
        let x = frame.x(compression.call);
        let top = frame.y_in(compression.tokens_before);
        let bottom = frame.y_in(compression.tokens_after);
        let _ = write!(
            out,
            r#"<g class="compression"><title>compression before call {call}: {before} → {after} tokens</title><line x1="{x}" y1="{top}" x2="{x}" y2="{bottom}" stroke="{MARK_COLOR}" stroke-width="1.2"/><path d="M{l},{t} L{r},{t} L{x},{tip} Z" fill="{MARK_COLOR}"/></g>"#,
            call = compression.call,
            before = short(compression.tokens_before),
            after = short(compression.tokens_after),
            x = fmt(x),
            top = fmt(top),
            bottom = fmt(bottom),
            l = fmt(x - 5.5),
            r = fmt(x + 5.5),
            t = fmt(top - 11.0),
            tip = fmt(top - 1.5),
        );
    }
    frame_border(out, &frame);
    out.push_str("</g>");
}

/// The engine's name, a one-line summary under it, and on the right the notes about what the
/// y scale leaves out.
fn header(out: &mut String, series: &Series, frame: &Frame, color: &str, y_max: u64) {
    let calls = series.tokens_per_call.len();
    let peak = series.tokens_per_call.iter().copied().max().unwrap_or(0);
    let last = series.tokens_per_call.last().copied().unwrap_or(0);
    let count = series.compressions.len();
    let title_y = TITLE_HEIGHT + 18.0;
    let subtitle_y = TITLE_HEIGHT + 38.0;
    let mut notes = Vec::new();
    if let Some((call, &peak)) = series
        .baseline_per_call
        .iter()
        .take(calls)
        .enumerate()
        .max_by_key(|&(index, &tokens)| (tokens, std::cmp::Reverse(index)))
        .filter(|&(_, &tokens)| tokens > y_max)
    {
        notes.push(format!(
            "no engine: {} at call {} (clipped)",
            short(peak),
            call + 1
        ));
    }
    if series.context_length > y_max {
        notes.push(format!(
            "window {} (above the plot)",
            short(series.context_length)
        ));
    }
    // The engine's name gets what the first note leaves of the row.
    let note_width = notes.first().map_or(0.0, |n| text_width(n, 12.0) + 40.0);
    let name_chars =
        ((frame.right - frame.left - note_width - 12.0) / (17.0 * 0.62)).max(8.0) as usize;
    let _ = write!(
        out,
        r##"<text x="{x}" y="{y}" font-size="17" font-weight="bold" fill="{color}">{name}</text><text x="{x}" y="{y2}" font-size="13" fill="#444444">{calls} call{cs} · {count} compression{s} · peak {peak} · final {last}</text>"##,
        x = fmt(frame.left),
        y = fmt(title_y),
        y2 = fmt(subtitle_y),
        name = escape(&shorten(&series.engine, name_chars)),
        cs = plural(calls),
        s = plural(count),
        peak = short(peak),
        last = short(last),
    );
    for (note, y) in notes.iter().zip([title_y, subtitle_y]) {
        let _ = write!(
            out,
            r#"<text class="note" x="{}" y="{}" font-size="12" text-anchor="end" fill="{MUTED_COLOR}">{}</text>"#,
            fmt(frame.right),
            fmt(y),
            escape(note)
        );
        // The note's own line style in front of it, so it reads as "this line".
        let (stroke, dash) = if note.starts_with("no engine") {
            (BASELINE_COLOR, "6,4")
        } else {
            (WINDOW_COLOR, "2,4")
        };
        let end = frame.right - text_width(note, 12.0) - 2.0;
        let _ = write!(
            out,
            r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{stroke}" stroke-width="1.4" stroke-dasharray="{dash}"/>"#,
            fmt(end - 24.0),
            fmt(end),
            y = fmt(y - 4.0),
        );
    }
}

/// `text`, cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// Grid lines, tick labels and axis titles.
fn axes(out: &mut String, frame: &Frame) {
    axes_labelled(out, frame, short, "context tokens", 6);
}

/// The grid, the call ticks and the axis titles, y ticks written by `label`.
fn axes_labelled(
    out: &mut String,
    frame: &Frame,
    label: fn(u64) -> String,
    y_title: &str,
    y_ticks: u64,
) {
    for tick in ticks(frame.y_max as u64, y_ticks) {
        let y = frame.y(tick);
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#e6e6e6" stroke-width="1"/><text x="{tx}" y="{ty}" font-size="12" text-anchor="end" fill="#444444">{label}</text>"##,
            l = fmt(frame.left),
            r = fmt(frame.right),
            y = fmt(y),
            tx = fmt(frame.left - 8.0),
            ty = fmt(y + 4.0),
            label = label(tick),
        );
    }
    if frame.calls > 0 {
        for tick in call_ticks(frame.calls) {
            let x = frame.x(tick);
            let _ = write!(
                out,
                r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}" stroke="#f0f0f0" stroke-width="1"/><line x1="{x}" y1="{b}" x2="{x}" y2="{b5}" stroke="#888888"/><text x="{x}" y="{ty}" font-size="12" text-anchor="middle" fill="#444444">{tick}</text>"##,
                x = fmt(x),
                t = fmt(frame.top),
                b = fmt(frame.bottom),
                b5 = fmt(frame.bottom + 5.0),
                ty = fmt(frame.bottom + 19.0),
            );
        }
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="13" text-anchor="middle" fill="{TEXT_COLOR}">model call</text><text transform="translate({},{}) rotate(-90)" font-size="13" text-anchor="middle" fill="{TEXT_COLOR}">{}</text>"#,
        fmt((frame.left + frame.right) / 2.0),
        fmt(frame.bottom + 40.0),
        fmt(frame.left - 62.0),
        fmt((frame.top + frame.bottom) / 2.0),
        escape(y_title)
    );
}

/// Millionths of a dollar as a tick label: `$12`, `$1.5`, `$0.25`, `$0.004`.
fn dollar_label(micro: u64) -> String {
    let dollars = micro as f64 / 1_000_000.0;
    let text = if dollars >= 10.0 || dollars == 0.0 {
        format!("{dollars:.0}")
    } else if dollars >= 1.0 {
        format!("{dollars:.1}")
    } else if dollars >= 0.01 {
        format!("{dollars:.2}")
    } else {
        format!("{dollars:.4}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("${text}")
}

/// The dollars spent up to each call, under the panel of the same engine.
fn cost_panel(out: &mut String, cost: &CostLines, index: usize, y_max: u64) {
    let x0 = PANEL_WIDTH * index as f64;
    let top = TITLE_HEIGHT + HEADER_HEIGHT + PLOT_HEIGHT + AXIS_HEIGHT + COST_GAP;
    let frame = Frame {
        left: x0 + MARGIN_LEFT,
        right: x0 + PANEL_WIDTH - MARGIN_RIGHT,
        top,
        bottom: top + COST_PLOT_HEIGHT,
        calls: cost.engine.len(),
        y_max: y_max as f64,
    };
    let clip = format!("cost-area-{index}");
    let _ = write!(
        out,
        r#"<g class="cost"><defs><clipPath id="{clip}"><rect x="{x}" y="{y}" width="{w}" height="{h}"/></clipPath></defs>"#,
        x = fmt(frame.left),
        y = fmt(frame.top),
        w = fmt(frame.right - frame.left),
        h = fmt(frame.bottom - frame.top),
    );
    axes_labelled(out, &frame, dollar_label, "dollars spent", 4);
    polyline(
        out,
        &frame,
        &cost.no_engine,
        BASELINE_COLOR,
        1.4,
        Some("6,4"),
        "cost-baseline",
        &clip,
    );
    polyline(
        out,
        &frame,
        &cost.engine,
        engine_color(index),
        2.2,
        None,
        "cost-engine",
        &clip,
    );
    let last = |line: &[u64]| line.last().copied().unwrap_or(0);
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="12" fill="{}">{}</text><text x="{}" y="{}" font-size="12" fill="{BASELINE_COLOR}">{}</text>"#,
        fmt(frame.right + 6.0),
        fmt(frame.y_in(last(&cost.engine)) + 4.0),
        engine_color(index),
        dollar_label(last(&cost.engine)),
        fmt(frame.right + 6.0),
        fmt(frame.y_in(last(&cost.no_engine)) + 4.0),
        dollar_label(last(&cost.no_engine)),
    );
    frame_border(out, &frame);
    out.push_str("</g>");
}

fn frame_border(out: &mut String, frame: &Frame) {
    let _ = write!(
        out,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#b0b0b0" stroke-width="1"/>"##,
        fmt(frame.left),
        fmt(frame.top),
        fmt(frame.right - frame.left),
        fmt(frame.bottom - frame.top)
    );
}

/// The window and threshold lines, labelled in the right margin; labels closer than a line of
/// text are pushed apart.
fn levels(out: &mut String, series: &Series, frame: &Frame, y_max: u64) {
    let mut lines = Vec::new();
    if series.context_length > 0 && series.context_length <= y_max {
        lines.push(("window", series.context_length, WINDOW_COLOR, "2,4", "1.2"));
    }
    if series.threshold > 0 && series.threshold <= y_max {
        lines.push(("threshold", series.threshold, THRESHOLD_COLOR, "8,5", "1.6"));
    }
    let mut label_y: Vec<f64> = lines.iter().map(|l| frame.y(l.1) + 4.0).collect();
    if let [upper, lower] = label_y[..] {
        let gap = 15.0;
        if lower - upper < gap {
            let middle = (upper + lower) / 2.0;
            label_y = vec![middle - gap / 2.0, middle + gap / 2.0];
        }
    }
    for ((class, tokens, stroke, dash, width), ty) in lines.into_iter().zip(label_y) {
        let y = frame.y(tokens);
        let ty = ty.clamp(frame.top + 4.0, frame.bottom + 4.0);
        let _ = write!(
            out,
            r#"<line class="{class}" x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="{stroke}" stroke-width="{width}" stroke-dasharray="{dash}"/><text x="{tx}" y="{ty}" font-size="12" fill="{stroke}">{class} {value}</text>"#,
            l = fmt(frame.left),
            r = fmt(frame.right),
            y = fmt(y),
            tx = fmt(frame.right + 6.0),
            ty = fmt(ty),
            value = short(tokens),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn polyline(
    out: &mut String,
    frame: &Frame,
    values: &[u64],
    stroke: &str,
    width: f64,
    dash: Option<&str>,
    class: &str,
    clip: &str,
) {
    if values.is_empty() {
        return;
    }
    let mut points = String::with_capacity(values.len() * 12);
    let mut previous = String::new();
    for (index, &tokens) in values.iter().enumerate() {
        let point = format!("{},{}", fmt(frame.x(index + 1)), fmt(frame.y(tokens)));
        // Thousands of calls land on the same tenth of a pixel: keep one of each run.
        if point != previous {
            if !points.is_empty() {
                points.push(' ');
            }
            points.push_str(&point);
            previous = point;
        }
    }
    let dash = dash.map_or(String::new(), |d| format!(r#" stroke-dasharray="{d}""#));
    let _ = write!(
        out,
        r#"<polyline class="{class}" clip-path="url(#{clip})" points="{points}" fill="none" stroke="{stroke}" stroke-width="{}" stroke-linejoin="round"{dash}/>"#,
        fmt(width)
    );
    if values.len() == 1 {
        let _ = write!(
            out,
            r#"<circle cx="{}" cy="{}" r="3.5" fill="{stroke}"/>"#,
            fmt(frame.x(1)),
            fmt(frame.y_in(values[0]))
        );
    }
}

/// One row under the panels: a line per engine, the baseline, the threshold, the window and
/// the compression mark.
fn legend(out: &mut String, series: &[Series], width: f64, y: f64) {
    let mut items: Vec<(String, String)> = Vec::new();
    for (index, one) in series.iter().enumerate() {
        let label = if series.len() == 1 {
            format!("context sent ({})", shorten(&one.engine, 40))
        } else {
            shorten(&one.engine, 40)
        };
        items.push((
            format!(
                r#"<line x1="0" y1="0" x2="28" y2="0" stroke="{}" stroke-width="2.5"/>"#,
                engine_color(index)
            ),
            label,
        ));
    }
    items.push((
        format!(
            r#"<line x1="0" y1="0" x2="28" y2="0" stroke="{BASELINE_COLOR}" stroke-width="1.4" stroke-dasharray="6,4"/>"#
        ),
        "no engine".to_string(),
    ));
    items.push((
        format!(
            r#"<line x1="0" y1="0" x2="28" y2="0" stroke="{THRESHOLD_COLOR}" stroke-width="1.6" stroke-dasharray="8,5"/>"#
        ),
        "threshold".to_string(),
    ));
    items.push((
        format!(
            r#"<line x1="0" y1="0" x2="28" y2="0" stroke="{WINDOW_COLOR}" stroke-width="1.2" stroke-dasharray="2,4"/>"#
        ),
        "model window".to_string(),
    ));
    items.push((
        format!(
            r#"<path d="M8.5,-6 L19.5,-6 L14,3 Z" fill="{MARK_COLOR}"/><line x1="14" y1="3" x2="14" y2="9" stroke="{MARK_COLOR}" stroke-width="1.2"/>"#
        ),
        "compression".to_string(),
    ));
    const FONT_SIZE: f64 = 13.0;
    const SWATCH: f64 = 36.0;
    const GAP: f64 = 26.0;
    let widths: Vec<f64> = items
        .iter()
        .map(|(_, label)| SWATCH + text_width(label, FONT_SIZE))
        .collect();
    let total = widths.iter().sum::<f64>() + GAP * (items.len() - 1) as f64;
    let mut x = ((width - total) / 2.0).max(8.0);
    let _ = write!(out, r#"<g class="legend">"#);
    for ((symbol, label), item_width) in items.iter().zip(widths) {
        let _ = write!(
            out,
            r#"<g transform="translate({},{})">{symbol}<text x="{SWATCH}" y="4.5" font-size="{FONT_SIZE}" fill="{TEXT_COLOR}">{}</text></g>"#,
            fmt(x),
            fmt(y),
            escape(label)
        );
        x += item_width + GAP;
    }
    out.push_str("</g>");
}

/// About how wide `text` is in DejaVu Sans (which runs wide; other fonts come out narrower).
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

/// The x ticks: round call numbers, starting at call 1.
fn call_ticks(calls: usize) -> Vec<usize> {
    let mut ticks: Vec<usize> = ticks(calls as u64, 7)
        .into_iter()
        .filter(|&t| t >= 1)
        .map(|t| t as usize)
        .collect();
    if ticks.first() != Some(&1) {
        ticks.insert(0, 1);
    }
    ticks
}

/// Round tick values from 0 up to `max`, about `count` steps.
fn ticks(max: u64, count: u64) -> Vec<u64> {
    if max == 0 {
        return vec![0];
    }
    let step = nice_step(max as f64 / count as f64);
    (0..)
        .map(|i: u64| i.saturating_mul(step))
        .take_while(|&t| t <= max)
        .take(64)
        .collect()
}

/// The round step (1, 2, 2.5 or 5 times a power of ten) at or above `raw`. 2.5 is skipped
/// where it would make labels like 1.25K or 1.25M.
fn nice_step(raw: f64) -> u64 {
    let raw = raw.max(1.0);
    let exponent = raw.log10().floor();
    let magnitude = 10f64.powf(exponent);
    let fraction = raw / magnitude;
    let quarter_ok = (exponent as i64).rem_euclid(3) != 2;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 2.5 && quarter_ok {
        2.5
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    let step = (nice * magnitude).round();
    if step >= u64::MAX as f64 {
        u64::MAX
    } else {
        (step as u64).max(1)
    }
}

/// The smallest round number at or above `value`, for the top of the y axis.
fn nice_ceiling(value: f64) -> u64 {
    let step = nice_step(value / 5.0);
    let steps = (value / step as f64).ceil().max(1.0);
    let top = steps * step as f64;
    if top >= u64::MAX as f64 {
        u64::MAX
    } else {
        top as u64
    }
}

/// A token count for people: `1500` → `1.5K`, `128000` → `128K`, `2000000` → `2M`.
pub fn short(value: u64) -> String {
    let units = [(1e9, "G"), (1e6, "M"), (1e3, "K")];
    let value = value as f64;
    for (index, &(size, unit)) in units.iter().enumerate() {
        if value >= size {
            let text = format!("{:.1}", value / size);
            // 999_950 rounds to "1000.0": say 1M instead.
            if text.starts_with("1000") && index > 0 {
                return format!("1{}", units[index - 1].1);
            }
            return format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text));
        }
    }
    format!("{value}")
}

/// An SVG coordinate: at most one decimal, no trailing `.0`.
pub(super) fn fmt(value: f64) -> String {
    let text = format!("{value:.1}");
    let text = text.strip_suffix(".0").unwrap_or(&text);
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Not allowed in XML 1.0 at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sawtooth from `low` to `high` and back, with the baseline rising to `baseline_end`.
    fn sawtooth(engine: &str, calls: usize, step: u64, baseline_end: u64) -> Series {
        let (low, high) = (20_000u64, 64_000u64);
        let mut tokens = Vec::new();
        let mut compressions = Vec::new();
        let mut current = low;
        for call in 1..=calls {
            if current > high {
                compressions.push(Compression {
                    call,
                    tokens_before: current,
                    tokens_after: low,
                });
                current = low;
            }
            tokens.push(current);
            current += step;
        }
        Series {
            engine: engine.to_string(),
            baseline_per_call: (1..=calls as u64)
                .map(|c| low + (baseline_end - low) * c / calls.max(1) as u64)
                .collect(),
            tokens_per_call: tokens,
            compressions,
            threshold: 64_000,
            context_length: 128_000,
            cost: None,
        }
    }

    /// Checks that every element opened is closed, in order. Enough of XML for these files.
    fn assert_balanced(svg: &str) {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = svg;
        while let Some(start) = rest.find('<') {
            let end = rest[start..].find('>').expect("unterminated tag") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "stray < in {tag}");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().unwrap_or_default();
                stack.push(name.to_string());
            }
            // Attribute values must be quoted and free of raw < and &.
            let text = &rest[..start];
            assert!(!text.contains('>'), "raw > in text {text:?}");
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed {stack:?}");
        for (index, _) in svg.match_indices('&') {
            let entity = &svg[index..svg[index..].find(';').map_or(svg.len(), |e| index + e + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&entity),
                "bad entity {entity}"
            );
        }
    }

    #[test]
    fn draws_one_mark_per_compression_and_labels_everything() {
        let series = sawtooth("compressor", 300, 1_000, 400_000);
        assert_eq!(series.compressions.len(), 6);
        let svg = svg("a <session> & \"more\"", std::slice::from_ref(&series));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_balanced(&svg);
        assert!(svg.contains("a &lt;session&gt; &amp; &quot;more&quot;"));
        assert!(svg.contains(">compressor<"));
        assert_eq!(svg.matches(r#"class="compression""#).count(), 6);
        assert!(svg.contains("300 calls · 6 compressions · peak 64K · final"));
        assert!(svg.contains("threshold 64K"));
        assert!(svg.contains("window 128K"));
        assert!(svg.contains("no engine: 400K at call 300 (clipped)"));
        assert!(svg.contains(">model call<") && svg.contains(">context tokens<"));
        assert!(svg.contains(r#"font-family="DejaVu Sans, Arial, sans-serif""#));
        assert_eq!(svg.matches("<polyline").count(), 2);
        // The y axis stops a little above the window, not at the baseline's peak.
        assert!(svg.contains(">150K<") && !svg.contains(">200K<"));
    }

    #[test]
    fn two_engines_side_by_side() {
        let a = sawtooth("compressor", 120, 1_000, 200_000);
        let b = sawtooth("summarizer", 120, 1_500, 200_000);
        let count = a.compressions.len() + b.compressions.len();
        let svg = svg("compare", &[a, b]);
        assert_balanced(&svg);
        assert_eq!(svg.matches(r#"class="panel""#).count(), 2);
        assert!(svg.contains(">compressor<") && svg.contains(">summarizer<"));
        assert_eq!(svg.matches(r#"class="compression""#).count(), count);
        assert!(svg.contains(r#"width="1800""#));
        assert!(svg.contains(r#"id="plot-area-0""#) && svg.contains(r#"id="plot-area-1""#));
    }

    #[test]
    fn baseline_that_fits_is_not_clipped() {
        let series = sawtooth("compressor", 80, 1_000, 110_000);
        let svg = svg("short", &[series]);
        assert_balanced(&svg);
        assert!(!svg.contains("clipped"));
        assert!(svg.contains("window 128K"));
    }

    #[test]
    fn far_window_is_left_out_and_noted() {
        let mut series = sawtooth("compressor", 50, 1_000, 60_000);
        series.context_length = 1_000_000;
        let svg = svg("t", &[series]);
        assert!(svg.contains("window 1M (above the plot)"));
        assert!(!svg.contains(r#"class="window""#));
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
            cost: None,
        };
        let svg_empty = svg("t", std::slice::from_ref(&empty));
        assert_balanced(&svg_empty);
        assert!(svg_empty.contains("no model calls"));
        let none = svg("t", &[]);
        assert_balanced(&none);
        assert!(none.contains("no engine was replayed"));

        let one = Series {
            tokens_per_call: vec![30_000],
            baseline_per_call: vec![30_000],
            ..empty.clone()
        };
        let one = svg("t", &[one]);
        assert_balanced(&one);
        assert!(one.contains("<circle") && one.contains("1 call · 0 compressions"));

        let zeros = Series {
            tokens_per_call: vec![0; 10],
            baseline_per_call: vec![0; 10],
            ..empty.clone()
        };
        assert_balanced(&svg("t", &[zeros]));

        let huge = Series {
            tokens_per_call: (0..5_000).map(|i| 300_000 + (i % 500) * 1_000).collect(),
            baseline_per_call: (0..5_000).map(|i| 300_000 + i * 900).collect(),
            compressions: (1..10)
                .map(|k| Compression {
                    call: k * 500 + 1,
                    tokens_before: 800_000,
                    tokens_after: 300_000,
                })
                .collect(),
            threshold: 800_000,
            context_length: 1_000_000,
            cost: None,
            ..empty.clone()
        };
        let huge = svg("t", &[huge]);
        assert_balanced(&huge);
        assert_eq!(huge.matches("<polyline").count(), 2);
        assert!(huge.contains("5000 calls · 9 compressions · peak 799K"));
        assert!(huge.contains(">1M<"));

        let odd = Series {
            engine: "odd \u{1} & 'q'".to_string(),
            tokens_per_call: vec![u64::MAX, 5],
            baseline_per_call: vec![1, 2, 3, 4],
            compressions: vec![Compression {
                call: 99,
                tokens_before: u64::MAX,
                tokens_after: 0,
            }],
            threshold: u64::MAX,
            context_length: u64::MAX,
            cost: None,
        };
        assert_balanced(&svg("t", &[odd.clone(), empty, odd]));
    }

    #[test]
    fn same_input_same_output() {
        let series = [
            sawtooth("a", 300, 1_000, 400_000),
            sawtooth("b", 300, 700, 400_000),
        ];
        assert_eq!(svg("t", &series), svg("t", &series));
    }

    #[test]
    fn numbers_and_ticks() {
        assert_eq!(short(0), "0");
        assert_eq!(short(999), "999");
        assert_eq!(short(1500), "1.5K");
        assert_eq!(short(20_000), "20K");
        assert_eq!(short(58_600), "58.6K");
        assert_eq!(short(128_000), "128K");
        assert_eq!(short(999_960), "1M");
        assert_eq!(short(1_500_000), "1.5M");
        assert_eq!(short(2_000_000), "2M");
        assert_eq!(
            ticks(150_000, 6),
            vec![0, 25_000, 50_000, 75_000, 100_000, 125_000, 150_000]
        );
        assert_eq!(ticks(1_500_000, 6), vec![0, 500_000, 1_000_000, 1_500_000]);
        assert_eq!(nice_ceiling(138_240.0), 150_000);
        assert_eq!(nice_ceiling(69_120.0), 80_000);
        assert_eq!(call_ticks(300), vec![1, 50, 100, 150, 200, 250, 300]);
        assert_eq!(call_ticks(1), vec![1]);
        assert_eq!(call_ticks(3), vec![1, 2, 3]);
        assert_eq!(call_ticks(5_000)[..3], [1, 1_000, 2_000]);
        assert_eq!(fmt(-0.01), "0");
        assert_eq!(fmt(12.0), "12");
        assert_eq!(fmt(12.34), "12.3");
    }
}
