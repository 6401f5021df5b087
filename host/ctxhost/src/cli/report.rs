//! The text report of a replay: what a user reads first, to decide between engines.

use std::fmt::Write;

use ctxhost_core::costing::{SessionCost, SummarizerCost};
use ctxhost_core::replay::{Replay, Trigger};
use ctxhost_costs::bill::format_dollars;
use ctxhost_costs::price::Provider;

/// `12345` → `12,345`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn percent(before: u64, after: u64) -> String {
    if before == 0 {
        return "0.0%".to_string();
    }
    format!(
        "{:+.1}%",
        (after as f64 - before as f64) / before as f64 * 100.0
    )
}

/// The report for one replay.
pub fn text(replay: &Replay) -> String {
    let mut out = String::new();
    let r = replay;
    let _ = writeln!(
        out,
        "session      {} ({} messages)",
        r.session_id, r.messages
    );
    if let Some(cost) = &r.cost {
        out.push_str(&cost_lines(&r.engine, cost));
    }
    let _ = writeln!(
        out,
        "engine       {}    context length {} tokens, compresses at {}",
        r.engine,
        thousands(r.context_length),
        thousands(r.threshold_tokens)
    );
    if r.requested != r.engine {
        let why = r.why.as_deref().unwrap_or("it did not resolve");
        let _ = writeln!(out, "             asked for {}: {why}", r.requested);
    }
    if let Some(fallback) = &r.fell_back_to {
        let why = r.why.as_deref().unwrap_or("it failed");
        let _ = writeln!(out, "             FAILED, finished on {fallback}: {why}");
    }
    let _ = writeln!(out, "model calls  {}", r.calls.len());
    let _ = writeln!(out, "compressions {}", r.compressions.len());
    for (index, c) in r.compressions.iter().enumerate() {
        let trigger = match c.trigger {
            Trigger::Preflight => "preflight",
            Trigger::Threshold => "threshold",
            Trigger::ColdCache => "cold cache",
        };
        let how = match (&c.error, &c.summarizer) {
            (Some(_), _) => "FAILED, context kept".to_string(),
            (None, Some(summarizer)) => format!("summarizer {summarizer}"),
            (None, None) => "no summarizer".to_string(),
        };
        let _ = writeln!(
            out,
            "  #{:<3} before call {:<5} {trigger:<9} {:>9} → {:>9} tokens ({}), {} → {} messages, {:.1} ms, {how}",
            index + 1,
            c.call,
            thousands(c.tokens_before),
            thousands(c.tokens_after),
            percent(c.tokens_before, c.tokens_after),
            c.messages_before,
            c.messages_after,
            c.elapsed_ms
        );
    }
    // A compression's "before" is what the engine was handed; the calls were sent its output.
    let _ = writeln!(
        out,
        "peak context  {} tokens sent in one model call (after compression; each \"before\" \
         above is what the engine was handed)",
        thousands(r.peak_tokens)
    );
    let _ = writeln!(
        out,
        "final context {} tokens, {} messages",
        thousands(r.final_tokens),
        r.final_messages
    );
    let _ = writeln!(
        out,
        "input tokens  {} with {}",
        thousands(r.total_input_tokens),
        r.engine
    );
    let _ = writeln!(
        out,
        "              {} with no engine ({} with {})",
        thousands(r.total_input_tokens_no_engine),
        percent(r.total_input_tokens_no_engine, r.total_input_tokens),
        r.engine
    );
    if !r.errors.is_empty() {
        let _ = writeln!(out, "errors        {}", r.errors.len());
        for error in &r.errors {
            let _ = writeln!(out, "  {error}");
        }
    }
    out
}

/// The session's dollars with the engine against no engine, and how they were reckoned.
fn cost_lines(engine: &str, cost: &SessionCost) -> String {
    let mut out = String::new();
    let verdict = if cost.saving_dollars >= 0.0 {
        format!(
            "saves {} ({:.1}%)",
            format_dollars(cost.saving_dollars),
            cost.saving_percent
        )
    } else {
        format!(
            "COSTS {} MORE ({:+.1}%)",
            format_dollars(-cost.saving_dollars),
            -cost.saving_percent
        )
    };
    let _ = writeln!(
        out,
        "cost         {} with {engine}, {} with no engine: {verdict}",
        format_dollars(cost.engine_total_dollars),
        format_dollars(cost.no_engine.total_dollars),
    );
    let clock = match (cost.timed_calls, cost.calls.len()) {
        (0, _) => format!("calls {} s apart", cost.pace_seconds),
        (timed, calls) if timed == calls => "calls timed by the transcript".to_string(),
        (timed, calls) => format!(
            "{timed} of {calls} calls timed by the transcript, the others {} s apart",
            cost.pace_seconds
        ),
    };
    let pauses = match cost.pauses.len() {
        0 => String::new(),
        n => format!(", {n} pause{}", if n == 1 { "" } else { "s" }),
    };
    let ttl = match cost.provider {
        Provider::Anthropic => format!(" {}", cost.cache_ttl.name()),
        Provider::OpenAi => String::new(),
    };
    let _ = writeln!(
        out,
        "             {} ({}), {} prompt cache{ttl}; {clock}{pauses}",
        cost.model, cost.prices, cost.provider
    );
    let tokens = &cost.engine.tokens;
    let input = match cost.provider {
        // OpenAI caches every prompt for free: nothing is billed as a write.
        Provider::OpenAi => format!(
            "{} uncached, {} read from the cache",
            thousands(tokens.uncached),
            thousands(tokens.cache_read)
        ),
        Provider::Anthropic => format!(
            "{} uncached, {} written to the cache, {} read from it",
            thousands(tokens.uncached),
            thousands(tokens.cache_write),
            thousands(tokens.cache_read)
        ),
    };
    let _ = writeln!(
        out,
        "             with {engine}: {input}; {} output",
        thousands(tokens.output)
    );
    if let Some(summarizer) = &cost.summarizer {
        out.push_str(&summarizer_line(summarizer));
    }
    let policy = if !cost.cache_aware {
        "tokens: compressed whenever the engine asked".to_string()
    } else if cost.decisions.is_empty() {
        "cache-aware: the engine never asked".to_string()
    } else {
        let decisions: Vec<String> = cost
            .decisions
            .iter()
            .map(|(why, count)| format!("{} {count}", why.replace('_', " ")))
            .collect();
        format!("cache-aware: {}", decisions.join(", "))
    };
    let _ = writeln!(out, "policy       {policy}");
    out
}

/// The summarizer's own calls: its row of the session's cost.
fn summarizer_line(cost: &SummarizerCost) -> String {
    let usage = &cost.usage;
    let cached = match usage.cache_read_tokens {
        0 => String::new(),
        read => format!(" ({} read from the cache)", thousands(read)),
    };
    let calls = format!(
        "{} call{}, {} input{cached}, {} output",
        usage.calls,
        if usage.calls == 1 { "" } else { "s" },
        thousands(usage.input_tokens),
        thousands(usage.output_tokens),
    );
    match cost.total_dollars {
        Some(total) => format!(
            "summarizer   {} with {}: {calls}\n",
            format_dollars(total),
            cost.summarizer
        ),
        None => format!(
            "summarizer   {}: {calls}; no price for {model} (set serve.models.{model}.price), \
             not counted\n",
            cost.summarizer,
            model = cost.model
        ),
    }
}

/// Two replays of one session side by side: dollars first, then input tokens.
pub fn compare(a: &Replay, b: &Replay) -> String {
    let mut out = String::new();
    if let (Some(ca), Some(cb)) = (&a.cost, &b.cost) {
        let _ = writeln!(
            out,
            "compare      {} costs {}, {} costs {}, no engine {}",
            a.engine,
            format_dollars(ca.engine_total_dollars),
            b.engine,
            format_dollars(cb.engine_total_dollars),
            format_dollars(ca.no_engine.total_dollars)
        );
    }
    let _ = writeln!(
        out,
        "{}{} sends {} input tokens, {} sends {}",
        if out.is_empty() {
            "compare      "
        } else {
            "             "
        },
        a.engine,
        thousands(a.total_input_tokens),
        b.engine,
        thousands(b.total_input_tokens)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }
}
