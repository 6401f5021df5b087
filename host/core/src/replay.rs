//! Replaying a recorded session the way an agent loop lives it: messages arrive in order, and
//! before each model call (each assistant message) the host measures the context it would send,
//! runs the engine's checks, compresses when the engine says so, and appends later messages to
//! the compressed context.

use std::sync::Arc;
use std::time::Instant;

use ctxhost_sdk::{CompressOptions, CompressionReport, Message, Usage};
use serde::Serialize;
use serde_json::Value;

use crate::costing::{Costing, Meter, SessionCost};
use ctxhost_costs::policy::{Moment, COLD_CACHE_TARGET_RATIO};
use ctxhost_summarizer::usage::SummarizerUsage;

use crate::session::{Session, SessionError};

/// One model call: the tokens sent with the engine and with no engine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallPoint {
    /// 1-based.
    pub call: usize,
    pub tokens: u64,
    pub baseline_tokens: u64,
    pub messages: usize,
}

/// Why a compression ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The cache was cold and the context past the policy's lower threshold: a compression
    /// the engine had not asked for yet, while rewriting the prefix costs nothing extra.
    ColdCache,
    /// `should_compress_preflight` before a call.
    Preflight,
    /// `should_compress` on the prompt tokens of the call before.
    Threshold,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompressionEvent {
    /// The model call it ran before.
    pub call: usize,
    pub trigger: Trigger,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_before: usize,
    pub messages_after: usize,
    pub elapsed_ms: f64,
    /// The summarizer the engine reported using (`offline`, a model), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Set when the engine failed and the context was kept unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the engine reported about this compression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<CompressionReport>,
    /// What the LLM summarizer's calls used during it, when it made any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer_usage: Option<SummarizerUsage>,
}

/// The outcome of a replay: what the report and the plot are made of.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    /// The engine asked for (`context.engine` or `--engine`).
    pub requested: String,
    /// The engine that started the session (the compressor when the one asked for was missing).
    pub engine: String,
    pub session_id: String,
    pub messages: usize,
    pub context_length: u64,
    pub threshold_tokens: u64,
    pub calls: Vec<CallPoint>,
    pub compressions: Vec<CompressionEvent>,
    pub peak_tokens: u64,
    pub final_tokens: u64,
    pub final_messages: usize,
    /// Input tokens over the whole session: what the user pays for.
    pub total_input_tokens: u64,
    pub total_input_tokens_no_engine: u64,
    pub elapsed_ms: f64,
    /// Engine errors met along the way (the replay went on).
    pub errors: Vec<String>,
    /// The engine that finished the session, when a failure replaced the one that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fell_back_to: Option<String>,
    /// Why the engine that ran is not the one asked for, or why it was replaced mid-session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// What the calls cost with the engine and with no engine, when the replay was priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<SessionCost>,
    #[serde(skip)]
    pub final_context: Arc<Vec<Message>>,
}

/// Replays `transcript` through `session`, pricing its calls when `costing` says how.
/// `progress(done, total)` is called after each message.
pub async fn replay(
    session: &mut Session,
    transcript: &[Message],
    costing: Option<&Costing>,
    mut progress: impl FnMut(usize, usize),
) -> Replay {
    let mut meter = costing.map(Meter::new);
    let started = Instant::now();
    let summarizer_before = session.summarizer_usage();
    let engine = session.engine().to_string();
    let mut errors = Vec::new();
    let note = |result: Result<(), SessionError>, errors: &mut Vec<String>| {
        if let Err(error) = result {
            errors.push(error.to_string());
        }
    };
    note(session.begin().await, &mut errors);
    let threshold_tokens = match session.status().await {
        Ok(status) => status.threshold_tokens,
        Err(error) => {
            errors.push(error.to_string());
            0
        }
    };

    let mut context: Arc<Vec<Message>> = Arc::new(Vec::new());
    // Running token totals, so each call costs only its new messages.
    let mut context_tokens = 0u64;
    let mut baseline_tokens = 0u64;
    let mut calls = Vec::new();
    let mut compressions = Vec::new();
    let mut compressed_once = false;

    // Set when `should_compress` said yes after a call: the compression runs before the next
    // call, once the tool results and user turns in between have arrived, as in an agent loop
    // (an engine is never handed a tool call whose results are still on their way).
    let mut compress_before_next_call = false;
    // What the last compression left of its context: what the policy expects of the next one.
    let mut last_ratio: Option<f64> = None;

    for (index, message) in transcript.iter().enumerate() {
        if message.is_assistant() {
            let call = calls.len() + 1;
            if let Some(meter) = meter.as_mut() {
                meter.begin_call(call, index);
            }
            let asked = if compress_before_next_call {
                Some(Trigger::Threshold)
            } else {
                match session.should_compress_preflight(context.clone()).await {
                    Ok(true) => Some(Trigger::Preflight),
                    Ok(false) => None,
                    Err(error) => {
                        errors.push(error.to_string());
                        None
                    }
                }
            };
            // The cache-aware policy holds a compression the cache would pay more for than it
            // saves, and compresses early on a cold cache.
            let moment = Moment {
                context_tokens,
                window: session.context_length(),
                threshold: threshold_tokens,
                engine_asks: asked.is_some(),
                cache_warm: true,
                expected_ratio: last_ratio,
                calls_so_far: calls.len() as u64,
                // What came since the last call's prompt (as the gateway measures it).
                growth_per_call: calls.last().map_or(0.0, |last: &CallPoint| {
                    context_tokens.saturating_sub(last.tokens) as f64
                }),
            };
            let trigger = match meter.as_mut().and_then(|meter| meter.decide(moment)) {
                None => asked,
                Some(why) if why.compresses() => asked.or(Some(Trigger::ColdCache)),
                Some(_) => None,
            };
            if let Some(trigger) = trigger {
                let event = compress(session, &mut context, call, trigger).await;
                // A compression that freed nothing says nothing of what the next one leaves.
                if event.error.is_none() && event.tokens_after < event.tokens_before {
                    last_ratio = Some(event.tokens_after as f64 / event.tokens_before as f64);
                }
                context_tokens = event.tokens_after;
                if let Some(meter) = meter.as_mut() {
                    meter.view_replaced(&context, |m| session.count_message(m));
                }
                compressed_once |= event.error.is_none();
                compressions.push(event);
            }
            calls.push(CallPoint {
                call,
                tokens: context_tokens,
                baseline_tokens,
                messages: context.len(),
            });
            // API-reported usage wins over local counts, while it still describes the context
            // sent (before any compression changed it).
            let reported = reported_usage(message).filter(|_| !compressed_once);
            let completion = session.count_message(message);
            let usage = reported.unwrap_or(Usage {
                prompt_tokens: context_tokens,
                completion_tokens: completion,
                total_tokens: context_tokens + completion,
                ..Usage::default()
            });
            let prompt_tokens = usage.prompt_tokens;
            if let Some(meter) = meter.as_mut() {
                meter.call(usage.completion_tokens);
            }
            note(session.record_usage(usage).await, &mut errors);
            append(
                &mut context,
                message,
                &mut context_tokens,
                session,
                &mut meter,
            );
            baseline_tokens += completion;
            compress_before_next_call = match session.should_compress(prompt_tokens).await {
                Ok(yes) => yes,
                Err(error) => {
                    errors.push(error.to_string());
                    false
                }
            };
        } else {
            let cost = append(
                &mut context,
                message,
                &mut context_tokens,
                session,
                &mut meter,
            );
            baseline_tokens += cost;
        }
        progress(index + 1, transcript.len());
    }

    note(session.end(context.clone()).await, &mut errors);
    errors.extend(compressions.iter().filter_map(|c| c.error.clone()));
    let peak_tokens = calls.iter().map(|c| c.tokens).max().unwrap_or(0);
    let why = match (session.fallback(), session.warnings().first()) {
        (Some(fallback), _) => Some(fallback.reason.to_string()),
        (None, Some(warning)) => Some(warning.summary.clone()),
        (None, None) => None,
    };
    Replay {
        requested: session.requested().to_string(),
        engine,
        session_id: session.id().to_string(),
        messages: transcript.len(),
        context_length: session.context_length(),
        threshold_tokens,
        total_input_tokens: calls.iter().map(|c| c.tokens).sum(),
        total_input_tokens_no_engine: calls.iter().map(|c| c.baseline_tokens).sum(),
        peak_tokens,
        final_tokens: context_tokens,
        final_messages: context.len(),
        calls,
        compressions,
        elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        errors,
        fell_back_to: session.fallback().map(|_| session.engine().to_string()),
        why,
        cost: meter.map(|meter| meter.finish(session.summarizer_usage().since(&summarizer_before))),
        final_context: context,
    }
}

/// Appends `message` to the context (and to what the meter follows); returns its tokens.
fn append(
    context: &mut Arc<Vec<Message>>,
    message: &Message,
    total: &mut u64,
    session: &Session,
    meter: &mut Option<Meter<'_>>,
) -> u64 {
    let tokens = session.count_message(message);
    *total += tokens;
    if let Some(meter) = meter.as_mut() {
        meter.appended(message, tokens);
    }
    Arc::make_mut(context).push(message.clone());
    tokens
}

async fn compress(
    session: &mut Session,
    context: &mut Arc<Vec<Message>>,
    call: usize,
    trigger: Trigger,
) -> CompressionEvent {
    let tokens_before = session.count(context);
    let messages_before = context.len();
    let options = CompressOptions {
        current_tokens: Some(tokens_before),
        // An early compression on a cold cache comes before the engine's own threshold (where
        // its protected head and tail may cover everything): forced, to what a compression is
        // expected to leave.
        force: trigger == Trigger::ColdCache,
        target_tokens: (trigger == Trigger::ColdCache)
            .then_some((tokens_before as f64 * COLD_CACHE_TARGET_RATIO) as u64),
        ..CompressOptions::default()
    };
    let started = Instant::now();
    let summarizer_before = session.summarizer_usage();
    let outcome = session.compress(context.clone(), options).await;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let summarizer_usage = session.summarizer_usage().since(&summarizer_before);
    *context = outcome.messages;
    CompressionEvent {
        call,
        trigger,
        tokens_before,
        tokens_after: session.count(context),
        messages_before,
        messages_after: context.len(),
        elapsed_ms,
        summarizer: outcome.report.as_ref().and_then(|r| r.summarizer.clone()),
        error: outcome.error.map(|e| e.to_string()),
        report: outcome.report,
        summarizer_usage: (summarizer_usage.calls > 0).then_some(summarizer_usage),
    }
}

/// Usage recorded on an assistant message (`usage` with OpenAI's or Anthropic's field names).
fn reported_usage(message: &Message) -> Option<Usage> {
    let extra = message.extra_fields();
    let usage = extra.get("usage")?;
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| usage.get(*n).and_then(Value::as_u64))
    };
    let prompt = field(&["prompt_tokens", "input_tokens"])?;
    let completion = field(&["completion_tokens", "output_tokens"]).unwrap_or(0);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: field(&["total_tokens"]).unwrap_or(prompt + completion),
        cache_read_tokens: field(&["cache_read_tokens", "cache_read_input_tokens"]),
        cache_write_tokens: field(&["cache_write_tokens", "cache_creation_input_tokens"]),
        cache_write_1h_tokens: field(&["cache_write_1h_tokens"])
            .or_else(|| usage["cache_creation"]["ephemeral_1h_input_tokens"].as_u64()),
        reasoning_tokens: field(&["reasoning_tokens"]),
    })
}
