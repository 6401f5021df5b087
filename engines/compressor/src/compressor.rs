//! The engine: when to compress, and the phases of a compression, cheapest first.

use std::collections::VecDeque;
use std::time::Instant;

use ctxhost_sdk::{
    budget, sequence, CompressOptions, CompressionReport, ContextEngine, EngineError,
    EngineSettings, Escalation, HostServices, Message, SummarizeRequest, SummaryShape,
    TokenTracker, Usage,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::prune::{prune, strip_images_before_latest, PruneCount};
use crate::settings::Settings;
use crate::summary::{self, fence_memory, is_summary, render, summary_body, summary_message};

/// After pruning alone, the context must be this far under the threshold to skip summarizing.
const PRUNE_ENOUGH: f64 = 0.75;
/// After a compression, the context must grow by this fraction of the threshold before the
/// engine compresses again (no thrashing when a compression could not get under it).
const REGROWTH: f64 = 0.10;
/// Summaries remembered as this engine's own: the current one, and a few a caller may still
/// hold (a compression prepared in the background and dropped leaves the previous one in use).
const REMEMBERED_SUMMARIES: usize = 8;

/// What the last compression did, for `ctxhost run` reports (`invoke("last_compression")`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Telemetry {
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_before: usize,
    pub messages_after: usize,
    pub pruned: usize,
    pub deduplicated: usize,
    /// Tool calls whose huge arguments were cut down.
    pub truncated_arguments: usize,
    /// Old images replaced by a placeholder.
    pub stripped_images: usize,
    pub summarized: bool,
    /// Calls made to the host's summarizer (answered or not).
    pub summarizer_calls: u32,
    /// Who wrote the summary, as the host's answer says (`offline` when the host fell back to
    /// it); `None` when pruning was enough or no summary could be written.
    pub summarizer: Option<String>,
    /// Why the configured summarizer did not write the summary, when it did not: the host's
    /// reason for falling back, or why the host could not answer at all.
    pub fallback_reason: Option<String>,
    pub elapsed_ms: f64,
}

/// A summary message this engine wrote.
struct Own {
    /// The message's text.
    message: String,
    /// The summary before a caller's size cut it, when it did.
    full: Option<String>,
}

/// What the middle of the conversation became.
struct Written {
    text: String,
    summarizer: Option<String>,
    fallback_reason: Option<String>,
}

/// The built-in lossy engine.
pub struct Compressor {
    services: HostServices,
    settings: Settings,
    tracker: TokenTracker,
    /// Context tokens right after the last compression: the local count, replaced by the
    /// provider's figure from the first call after it (which includes tool schemas and framing
    /// the local count cannot see).
    tokens_after_last: Option<u64>,
    awaiting_first_usage: bool,
    last: Option<Telemetry>,
    /// The summary messages this engine wrote, newest last: each message's text, and the
    /// summary in full when a caller's size cut it (what the cut left out comes back when a
    /// later compression has room). Only these are updated as a previous summary: a message
    /// that merely carries the frame (a tool output quoting one, a forged one) is a turn like
    /// any other.
    written: VecDeque<Own>,
}

impl Compressor {
    pub const NAME: &'static str = "compressor";

    /// `services.config()` is the `compression` section of `config.yaml`.
    pub fn new(services: HostServices) -> Result<Self, EngineError> {
        let settings = Settings::from_section(services.config())?;
        let tracker = TokenTracker::new(services.model().context_length, settings.threshold);
        Ok(Compressor {
            services,
            settings,
            tracker,
            tokens_after_last: None,
            awaiting_first_usage: false,
            last: None,
            written: VecDeque::new(),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The summary this engine wrote that `message` is (while it remembers it).
    fn own(&self, message: &Message) -> Option<&Own> {
        if !is_summary(message) {
            return None;
        }
        let text = message.content_text();
        self.written.iter().find(|own| own.message == *text)
    }

    /// Whether `message` is a summary this engine wrote (and still remembers).
    fn is_own(&self, message: &Message) -> bool {
        self.own(message).is_some()
    }

    /// Remembers a summary message this engine wrote.
    fn remember(&mut self, own: Own) {
        if self.written.len() == REMEMBERED_SUMMARIES {
            self.written.pop_front();
        }
        self.written.push_back(own);
    }

    fn count(&self, messages: &[Message]) -> u64 {
        self.services.count_messages_tokens(messages)
    }

    /// True while the context has not grown enough since a compression that left it near or
    /// over the threshold.
    fn recently_compressed(&self, tokens: u64) -> bool {
        let regrowth = (self.tracker.threshold_tokens() as f64 * REGROWTH) as u64;
        self.tokens_after_last
            .is_some_and(|after| tokens < after.saturating_add(regrowth))
    }

    /// The protected head: system prompt(s) and the first exchange (the first user message and
    /// the assistant turn answering it, with its tool results), or `protect_first_n` messages
    /// after the system prompt when set. Under a caller's size (`sized`) the first exchange is
    /// the task alone: the size is measured past the system prompt and the task when they
    /// exceed it, and the assistant's first answer is work like any other.
    fn head_end(&self, messages: &[Message], sized: bool) -> usize {
        let mut end = sequence::head_len(messages);
        if let Some(count) = self.settings.protect_first_n {
            let mut kept = 0;
            while kept < count && messages.get(end).is_some_and(|m| !self.is_own(m)) {
                end += 1;
                kept += 1;
            }
            return sequence::end_of_turn(messages, end);
        }
        let first = |i: usize, role: fn(&Message) -> bool| {
            messages.get(i).is_some_and(|m| role(m) && !self.is_own(m))
        };
        if first(end, Message::is_user) {
            end += 1;
            if !sized && first(end, Message::is_assistant) {
                end = sequence::end_of_turn(messages, end + 1);
            }
        }
        end
    }

    /// The protected tail: a token budget (`target_ratio` of the threshold) with a floor of
    /// `protect_last_n` messages, never more than half the threshold, never splitting a tool
    /// call from its results, and always holding the latest user message. With `room` (what a
    /// caller's target size leaves beside the head and the summary), the tail fits that
    /// instead, with no floor but the latest turn.
    fn tail_start(&self, messages: &[Message], head_end: usize, room: Option<u64>) -> usize {
        let threshold = self.tracker.threshold_tokens();
        let (budget, cap, floor) = match room {
            Some(room) => (room, room, 1),
            None => (
                (threshold as f64 * self.settings.target_ratio) as u64,
                threshold / 2,
                self.settings.protect_last_n,
            ),
        };
        let mut start = messages.len();
        let mut tokens = 0u64;
        while start > head_end {
            let cost = self.services.count_message_tokens(&messages[start - 1]);
            let kept = messages.len() - start;
            let over_budget = kept >= floor && tokens + cost > budget;
            if kept >= 1 && (over_budget || tokens + cost > cap) {
                break;
            }
            tokens += cost;
            start -= 1;
        }
        let mut start = sequence::start_of_turn(messages, start).max(head_end);
        if let Some(last_user) = messages
            .iter()
            .rposition(|m| m.is_user() && !self.is_own(m))
        {
            if last_user >= head_end && last_user < start {
                start = last_user;
            }
        }
        start
    }

    fn summary_budget(&self, middle_tokens: u64) -> u64 {
        let window = self.tracker.context_length as f64;
        let high = (window * 0.05).clamp(1.0, 12_000.0) as u64;
        let low = 2_000.min(high);
        ((middle_tokens as f64 * 0.20) as u64).clamp(low, high)
    }

    /// Asks the host's summarizer. The host owns the failure ladder (its configured
    /// summarizer, else the offline summary with the reason, and a cool-down after a failure),
    /// so an answer is used as it comes. A host that cannot answer at all still gets progress:
    /// a short note saying what was removed takes the summary's place (Hermes' behaviour when
    /// its summary fails).
    fn summarize(&self, request: &SummarizeRequest, removed: usize) -> Written {
        let why = match self.services.summarize(request) {
            Ok(summary) if !summary.text.trim().is_empty() => {
                return Written {
                    text: summary.text,
                    summarizer: Some(summary.summarizer),
                    fallback_reason: summary.fallback_reason,
                }
            }
            Ok(summary) => format!("{} answered with an empty summary", summary.summarizer),
            Err(error) => format!("the host's summarizer could not answer: {error}"),
        };
        self.services.warn(&format!(
            "{why}; {removed} earlier messages removed unsummarized"
        ));
        Written {
            text: format!(
                "No summary could be written for this part of the conversation: {removed} \
                 earlier messages were removed to fit the context window."
            ),
            summarizer: None,
            fallback_reason: Some(why),
        }
    }

    fn compress_messages(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> (Vec<Message>, Telemetry) {
        let tokens_before = self.count(messages);
        let mut telemetry = Telemetry {
            tokens_before,
            tokens_after: tokens_before,
            messages_before: messages.len(),
            messages_after: messages.len(),
            ..Telemetry::default()
        };
        let sized = options.target_tokens.is_some();
        let head_end = self.head_end(messages, sized);
        // A caller's size (`CompressOptions::target_tokens`) is spent in the order of
        // `ctxhost_sdk::budget`: the head, then the summary (standing facts, files in short
        // lines, goal and plan, more files, the latest state) and the newest turn; the
        // verbatim tail before the newest turn gives way first, so under a size it is the
        // newest turn alone.
        let head_tokens = self.count(&messages[..head_end]);
        let tail_start = self.tail_start(messages, head_end, sized.then_some(0));
        if tail_start <= head_end {
            return (messages.to_vec(), telemetry);
        }

        // Phase 1: prune old tool output and superseded reads.
        let mut work = messages.to_vec();
        let count: PruneCount = prune(&mut work, head_end..tail_start);
        telemetry.pruned = count.pruned;
        telemetry.deduplicated = count.deduplicated;
        telemetry.truncated_arguments = count.truncated_arguments;
        telemetry.stripped_images = count.stripped_images + strip_images_before_latest(&mut work);
        // A caller's size that the newest turn leaves the summary too little of (a long tool
        // run after the newest user message, which the tail always holds): the turn's older
        // tool outputs are pruned too, all but the newest call's.
        if options.target_tokens.is_some_and(|target| {
            let tail = self.count(&work[tail_start..]);
            budget::summary_room_past_head(target, head_tokens, tail) <= budget::FACTS_FLOOR_TOKENS
        }) {
            let newest_turn = sequence::start_of_turn(&work, work.len() - 1).max(tail_start);
            let more = prune(&mut work, tail_start..newest_turn);
            telemetry.pruned += more.pruned;
            telemetry.deduplicated += more.deduplicated;
            telemetry.truncated_arguments += more.truncated_arguments;
        }
        let after_prune = self.count(&work);
        let enough = (self.tracker.threshold_tokens() as f64 * PRUNE_ENOUGH) as u64;
        let pruned_enough = match options.target_tokens {
            Some(target) => after_prune <= target,
            None => after_prune <= enough && !options.force,
        };
        if (count.any() || telemetry.stripped_images > 0) && pruned_enough {
            telemetry.tokens_after = after_prune;
            return (work, telemetry);
        }

        // Phase 2: summarize the middle into the handoff, updating the previous summary.
        let middle = &work[head_end..tail_start];
        // An own summary is updated in full: what a caller's size left out of its message
        // is still the session's.
        let previous: Vec<String> = middle
            .iter()
            .filter_map(|m| {
                self.own(m)
                    .map(|own| own.full.clone().unwrap_or_else(|| summary_body(m)))
            })
            .collect();
        let turns = middle.iter().filter(|m| !self.is_own(m));
        let removed = turns.clone().count();
        let mut content = String::new();
        if let Some(memory) = options
            .memory_context
            .as_deref()
            .filter(|m| !m.trim().is_empty())
        {
            content.push_str(&fence_memory(memory));
        }
        content.push_str(&render(turns));
        let tail_tokens = self.count(&work[tail_start..]);
        let (previous_role, next_role) = (
            work[..head_end].last().map(Message::role),
            work.get(tail_start).map(Message::role),
        );
        // What the summary message may cost under a caller's size: what the head and the
        // newest turn leave (the newest turn alone when the head is over the size), all of it
        // and no more, or room for the standing facts when they fill it
        // (`ctxhost_sdk::budget::summary_room_past_head`).
        let summary_room = options
            .target_tokens
            .map(|target| budget::summary_room_past_head(target, head_tokens, tail_tokens));
        let usual = self.summary_budget(self.count(middle));
        let max_tokens = match summary_room {
            Some(room) => {
                let frame = self
                    .services
                    .count_message_tokens(&summary_message("", None, None));
                room.saturating_sub(frame).min(usual).max(1)
            }
            None => usual,
        };
        let request = SummarizeRequest {
            instructions: summary::INSTRUCTIONS.to_string(),
            content,
            max_tokens,
            focus_topic: options.focus_topic.clone(),
            previous_summary: (!previous.is_empty()).then(|| previous.join("\n\n")),
            shape: SummaryShape::Handoff,
        };
        let mut written = self.summarize(&request, removed);
        telemetry.summarizer_calls = 1;
        // Under a caller's size, a summary that came back longer than asked (a summarizer
        // counts tokens its own way) is asked for once more, shorter by what it overshot.
        // Counted only then: without a caller's size nothing reads it (the hot path).
        let got = options
            .target_tokens
            .map(|_| self.services.count_tokens(&written.text));
        let over = got.filter(|got| *got > request.max_tokens && request.max_tokens > 1);
        let mut full = None;
        if let Some(got) = over {
            let mut shorter = request.clone();
            shorter.max_tokens =
                ((request.max_tokens as f64).powi(2) / got as f64 * 0.95).max(1.0) as u64;
            written = self.summarize(&shorter, removed);
            telemetry.summarizer_calls = 2;
        } else if got.is_some() && max_tokens < usual {
            // A caller's size left it less room than usual, so it may have left out what did
            // not fit (a summarizer drops whole items, so one that left some out can still end
            // well short of its room): the summary at its usual size is remembered with it, and
            // what the room left out comes back when a later compression has room for it.
            let whole = SummarizeRequest {
                max_tokens: usual,
                ..request.clone()
            };
            full = Some(self.summarize(&whole, removed).text);
            telemetry.summarizer_calls = 2;
        }
        // Still over: cut by the budget order, narrative first and standing facts last.
        if let Some(room) = summary_room {
            let fits = |body: &str| {
                self.services
                    .count_message_tokens(&summary_message(body, previous_role, next_role))
                    <= room
            };
            if !fits(&written.text) {
                let cut = budget::trim_summary(&written.text, fits);
                let whole = std::mem::replace(&mut written.text, cut);
                full.get_or_insert(whole);
            }
        }
        // A size the head and the newest turn leave less than a summary's frame of has no room
        // for one: the middle goes without it.
        let summary = (!written.text.trim().is_empty())
            .then(|| summary_message(&written.text, previous_role, next_role));
        // The head and the tail move from `work`; the middle is dropped.
        let mut out = work;
        let summary_text = summary
            .as_ref()
            .map(|summary| summary.content_text().into_owned());
        out.splice(head_end..tail_start, summary);
        let out = sequence::repair(out);
        telemetry.summarized = true;
        telemetry.summarizer = written.summarizer;
        telemetry.fallback_reason = written.fallback_reason;
        telemetry.tokens_after = self.count(&out);
        telemetry.messages_after = out.len();
        if telemetry.tokens_after >= tokens_before {
            // Nothing gained (a middle smaller than its summary): keep the conversation.
            telemetry.tokens_after = tokens_before;
            telemetry.messages_after = messages.len();
            telemetry.summarized = false;
            telemetry.summarizer = None;
            return (messages.to_vec(), telemetry);
        }
        if let Some(message) = summary_text {
            self.remember(Own { message, full });
        }
        (out, telemetry)
    }
}

impl ContextEngine for Compressor {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn tracker(&mut self) -> Option<&mut TokenTracker> {
        Some(&mut self.tracker)
    }

    fn update_from_response(&mut self, usage: &Usage) -> Result<(), EngineError> {
        self.tracker.record_usage(usage);
        if self.awaiting_first_usage {
            self.awaiting_first_usage = false;
            self.tokens_after_last = Some(usage.prompt_tokens);
        }
        Ok(())
    }

    fn should_compress(&mut self, prompt_tokens: u64) -> Result<bool, EngineError> {
        Ok(self.settings.enabled
            && self.tracker.over_threshold(prompt_tokens)
            && !self.recently_compressed(prompt_tokens))
    }

    fn should_compress_preflight(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        if !self.settings.enabled {
            return Ok(false);
        }
        // The gateway's hygiene pass: a rough estimate against a higher bar, for sessions that
        // grew between turns (cheap: no tokenizer).
        let rough: u64 = messages
            .iter()
            .map(|m| (m.searchable_text().len() as u64).div_ceil(4) + 4)
            .sum();
        let hygiene = (self.tracker.context_length as f64 * self.settings.hygiene_ratio) as u64;
        if rough >= hygiene && !self.recently_compressed(rough) {
            return Ok(true);
        }
        let exact = self.count(messages);
        Ok(self.tracker.over_threshold(exact) && !self.recently_compressed(exact))
    }

    fn compress(
        &mut self,
        messages: &[Message],
        options: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        let started = Instant::now();
        let (out, mut telemetry) = self.compress_messages(messages, options);
        telemetry.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        if telemetry.tokens_after < telemetry.tokens_before {
            self.tracker.compression_count += 1;
        }
        self.tokens_after_last = Some(telemetry.tokens_after);
        self.awaiting_first_usage = true;
        self.last = Some(telemetry);
        Ok(out)
    }

    fn has_content_to_compress(&mut self, messages: &[Message]) -> Result<bool, EngineError> {
        let head_end = self.head_end(messages, false);
        Ok(self.tail_start(messages, head_end, None) > head_end)
    }

    fn on_session_reset(&mut self) -> Result<(), EngineError> {
        self.tracker.reset();
        self.tokens_after_last = None;
        self.awaiting_first_usage = false;
        self.last = None;
        self.written.clear();
        Ok(())
    }

    fn status_details(&mut self) -> Result<Value, EngineError> {
        Ok(json!({ "last_compression": self.last }))
    }

    fn last_compression(&mut self) -> Result<Option<CompressionReport>, EngineError> {
        Ok(self.last.as_ref().map(Telemetry::report))
    }

    fn invoke(&mut self, op: &str, _payload: &Value) -> Result<Value, EngineError> {
        match op {
            "last_compression" => Ok(serde_json::to_value(&self.last)?),
            other => Err(EngineError::unsupported(other)),
        }
    }

    fn recognize_written(&mut self, messages: &[Message]) -> Result<(), EngineError> {
        // Its summaries only, as they were written: what the size left out of one died with
        // the earlier life, so a later compression with room rewrites it from what it says.
        for message in messages.iter().filter(|m| is_summary(m)) {
            if !self.is_own(message) {
                self.remember(Own {
                    message: message.content_text().into_owned(),
                    full: None,
                });
            }
        }
        Ok(())
    }
}

impl Telemetry {
    /// The account in the contract's shape; what only this engine does goes in `details`.
    fn report(&self) -> CompressionReport {
        CompressionReport {
            tokens_before: self.tokens_before,
            tokens_after: self.tokens_after,
            messages_before: self.messages_before as u64,
            messages_after: self.messages_after as u64,
            summarizer: self.summarizer.clone(),
            summarizer_calls: self.summarizer_calls,
            fallback_reason: self.fallback_reason.clone(),
            // The summarizer's failure ladder is the host's; this engine's own last resort is
            // the note written when the host could not answer at all.
            escalation: if self.summarized && self.summarizer.is_none() {
                Escalation::Deterministic
            } else {
                Escalation::Normal
            },
            elapsed_ms: self.elapsed_ms,
            details: json!({
                "summarized": self.summarized,
                "pruned": self.pruned,
                "deduplicated": self.deduplicated,
                "truncated_arguments": self.truncated_arguments,
                "stripped_images": self.stripped_images,
            }),
        }
    }
}
