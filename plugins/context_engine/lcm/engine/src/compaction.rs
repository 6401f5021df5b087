//! Compaction: replacing the oldest parts of the context with summaries until it fits.
//!
//! Each pass does one thing, in this order of preference:
//! 1. when the context holds more than `max_summary_blocks` summary blocks, adjacent ones are
//!    condensed into one: the oldest run of one depth (up to `condensed_min_fanout`, or the
//!    excess), else enough blocks of the lowest depths, whatever their depths (see below);
//! 2. a **condensed pass** when `condensed_min_fanout` consecutive summaries of one depth have
//!    accumulated: they become one summary a level deeper (this keeps the DAG balanced, with
//!    fewer than `condensed_min_fanout` summaries per depth in the context);
//! 3. a **leaf pass**: the oldest raw messages outside the protected fresh tail, up to
//!    `leaf_chunk_tokens` and ending on a turn boundary, become one leaf summary;
//! 4. under pressure, two or more consecutive summaries of one depth are merged;
//! 5. only when the summary blocks alone exceed their budget (half of what the threshold leaves
//!    beside the head, and at least a tenth of the window), the two adjacent summaries of the
//!    lowest depths are merged, whatever their depths (the last resort).
//!
//! Under a caller's size (`CompressOptions::target_tokens`) the budget is spent in the order
//! of `ctxhost_sdk::budget`: the head is the system prompt and the task (the first user
//! message, kept verbatim), the fresh tail is the newest turn alone, every message between is summarized,
//! and the summaries before the tail become one block that gets all the room the
//! head and the tail leave (measured past the head when the head alone exceeds the size). One
//! block, not one per pass: each block's frame costs room, and a summary written small to fit
//! beside others has lost the standing facts and files no later merge can bring back. The
//! summarizer writes a block's standing facts first and its files before its narrative, so
//! the narrative gives way first when the room is short.
//!
//! A block written into a small room (a round whose newest turn left little) keeps only the
//! standing facts and files it has room for, while the summaries under it still state the
//! rest (see `held`): a condensed pass reads back what each child lost (each file at its
//! newest state), and under a size a compaction whose room holds them all merges the blocks
//! before the tail that lost some (once per compaction), so a tight round costs the view
//! those facts and files until the room grows, not for good.
//!
//! A leaf that gives a standing fact a new value (see `ctxhost_offline_summary::standing`) is
//! condensed at once with the blocks back to the oldest one still stating the old value, so no
//! block of the view shows a replaced value as current.
//!
//! Merging summaries of different depths only in cases 1 and 5 matters in a tiny window, where
//! the head and the fresh tail alone may keep the context over target: merging the oldest block
//! with the next on every call grows a chain one level deeper per call. Merging the run of the
//! lowest depths instead works like a carry in a counter: the DAG stays logarithmically deep.
//!
//! It is **incremental** (it stops as soon as the context is at or under target, with no more
//! than `max_summary_blocks` blocks, and no larger than it was) and **bounded** (at most `max_passes` passes, and no new
//! pass after the deadline; summarizer calls are themselves cut off at the deadline). Every
//! pass makes progress whatever the summarizer does, because summarizing escalates down to
//! truncation, and every merge takes at least two blocks.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::{Duration, Instant};

use ctxhost_offline_summary::carry;
use ctxhost_offline_summary::files::FileBook;
use ctxhost_offline_summary::standing::Book;
use ctxhost_sdk::{EngineError, HostServices};
use serde::{Deserialize, Serialize};

use crate::blocks;
use crate::context::{self, Entry, EntryKind};
use crate::held::{self, Held};
use crate::settings::Settings;
use crate::summarize::{self, Job, Source};
use ctxhost_lcm_store::ids::summary_id;
use ctxhost_lcm_store::{now_ms, Sources, Store, SummaryKind, SummaryRow};

/// The token budget of one compaction.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The head (leading system messages), which is never compacted.
    pub head_tokens: u64,
    pub context_length: u64,
    /// Where compaction was triggered.
    pub threshold_tokens: u64,
    /// Stop once the context is at or under this.
    pub target_tokens: u64,
    /// The caller asked for a size (`CompressOptions::target_tokens`, the target above): it is
    /// spent in the order of `ctxhost_sdk::budget`, so the fresh tail is the newest turn alone
    /// and the summaries get all the rest, as one block, instead of their shares of the window.
    pub sized: bool,
}

impl Budget {
    /// Whether a context of `tokens` fits the target, `head` of them the protected head's:
    /// when the head alone is larger than a caller's size, what follows it is measured against
    /// the size, since no output that keeps the head can fit it.
    fn fits(&self, tokens: u64, head: u64) -> bool {
        if self.sized && head > self.target_tokens {
            tokens - head <= self.target_tokens
        } else {
            tokens <= self.target_tokens
        }
    }
}

/// How one `compress` call went: the per-compaction telemetry (`last_compaction`), stored with
/// each compaction. Read back with defaults, so reports stored by older releases still read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Report {
    pub session_id: String,
    pub messages_ingested: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// Messages handed to `compress`, and in the view it returned.
    pub messages_before: usize,
    pub messages_after: usize,
    pub target_tokens: u64,
    pub passes: usize,
    pub leaf_summaries: usize,
    pub condensed_summaries: usize,
    /// Summaries of the same sources already stored (a replay, a resume) and used again
    /// instead of asking the summarizer twice.
    pub reused_summaries: usize,
    pub summarizer_calls: u32,
    /// The highest escalation level any summary of this compaction needed: 0 normal,
    /// 1 aggressive, 2 truncation.
    pub escalation_level: u8,
    /// The summarizer that wrote the last summary (`truncation` for the engine's fallback).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub summarizer_failures: Vec<String>,
    pub elapsed_ms: f64,
    pub deadline_ms: u64,
    /// Why compaction stopped.
    pub stopped: StopReason,
}

/// Why a compaction stopped. Stored with each compaction as its snake_case name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The context was under the threshold: nothing ran.
    #[default]
    NotNeeded,
    /// The context reached the target.
    UnderTarget,
    /// Everything outside the protected head and fresh tail is already summarized.
    NothingToCompact,
    /// The pass limit was reached.
    MaxPasses,
    /// The compaction's deadline passed.
    Deadline,
    /// The compacted view would have cost more tokens than the context it replaced (summary
    /// blocks over little to summarise): the context was returned unchanged.
    WouldGrow,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::NotNeeded => "not_needed",
            StopReason::UnderTarget => "under_target",
            StopReason::NothingToCompact => "nothing_to_compact",
            StopReason::MaxPasses => "max_passes",
            StopReason::Deadline => "deadline",
            StopReason::WouldGrow => "would_grow",
        })
    }
}

/// Most summarizer failure lines kept in a report.
const MAX_FAILURE_LINES: usize = 8;

pub struct Compactor<'a> {
    pub store: &'a mut Store,
    pub services: &'a HostServices,
    pub settings: &'a Settings,
    pub conv: i64,
    /// Text from the host's memory providers (`CompressOptions::memory_context`): reference
    /// material for leaf summaries.
    pub memory: Option<&'a str>,
    /// Under a caller's size: what the summaries before the fresh tail may cost together,
    /// set before each pass.
    pub room: Option<u64>,
    /// The stored summaries a run could write again, which [`run`](Self::run) looks up first
    /// (empty before; see [`Compactor::stored_over`]): a summary's id derives from its sources,
    /// so any other id is new, and is written without asking the store first.
    pub stored: HashSet<String>,
    /// What the summaries read so far hold (the engine's, kept between compactions).
    pub held: &'a mut Held,
}

impl Compactor<'_> {
    /// Compacts `entries` (kept in step with the store) until they fit `budget`. With `force`,
    /// at least one pass runs when there is anything to compact.
    pub fn run(
        &mut self,
        entries: &mut Vec<Entry>,
        budget: Budget,
        force: bool,
        focus_topic: Option<&str>,
        report: &mut Report,
    ) -> Result<(), EngineError> {
        let started = Instant::now();
        let deadline = started + Duration::from_millis(self.settings.deadline_ms);
        self.stored = self.stored_over(entries)?;
        report.deadline_ms = self.settings.deadline_ms;
        report.target_tokens = budget.target_tokens;
        report.stopped = StopReason::NothingToCompact;
        let max_blocks = self.settings.max_summary_blocks;
        let fanout = self.settings.condensed_min_fanout;
        let tokens_before = budget.head_tokens + context::tokens(entries);
        // Under a size, blocks that lost standing facts to a smaller room are merged at most
        // once per compaction, when its room holds them.
        let mut restored = false;
        loop {
            let tokens = budget.head_tokens + context::tokens(entries);
            // Under a size the head is the system prompt and the task (the first user
            // message), both verbatim.
            let first = if budget.sized { task_end(entries) } else { 0 };
            let head = budget.head_tokens + context::tokens(&entries[..first]);
            let blocks = entries.iter().filter(|e| e.summary().is_some()).count();
            // A summary over a few short messages costs more than they did: while the context
            // is larger than it was, the next pass goes on (the engine returns the context
            // unchanged if it ends larger).
            let grown = tokens > tokens_before;
            let done = budget.fits(tokens, head)
                && !grown
                && blocks <= max_blocks
                && !(force && report.passes == 0);
            let tail = self.tail_start(entries, budget, head);
            let lossy = if done && budget.sized && !restored {
                self.lossy_run(entries, tail)?
            } else {
                None
            };
            if done && lossy.is_none() {
                report.stopped = StopReason::UnderTarget;
                break;
            }
            if report.passes >= self.settings.max_passes {
                report.stopped = StopReason::MaxPasses;
                break;
            }
            // The first pass always runs (it degrades to truncation when time is short), so a
            // compaction that was asked for always makes progress.
            if report.passes > 0 && Instant::now() >= deadline {
                report.stopped = StopReason::Deadline;
                break;
            }
            if let Some(range) = lossy {
                restored = true;
                self.condensed_pass(entries, range, focus_topic, deadline, report)?;
                report.passes += 1;
                continue;
            }
            // Under target, only the block limit has work left (or a forced first pass).
            let over_target = !budget.fits(tokens, head) || grown || (force && report.passes == 0);
            let excess = blocks.saturating_sub(max_blocks);
            let pass = if let Some(range) = (excess > 0)
                // Same-depth blocks first (a carry keeps the DAG balanced), else the adjacent
                // blocks of the lowest depths.
                .then(|| {
                    condensable(entries, tail, 2, fanout.max(excess + 1), true)
                        .or_else(|| shallowest_run(entries, tail, excess + 1))
                })
                .flatten()
            {
                self.condensed_pass(entries, range, focus_topic, deadline, report)
            } else if budget.sized {
                // Every message before the tail summarized, then the summaries as one block
                // when they are over the room together.
                if let Some(range) = over_target
                    .then(|| leaf_chunk(entries, first..tail, self.settings.leaf_chunk_tokens))
                    .flatten()
                {
                    self.leaf_pass(entries, range, focus_topic, deadline, report)
                } else if let Some(range) = (over_target
                    && summary_tokens(&entries[..tail.min(entries.len())])
                        > self.room.unwrap_or(u64::MAX))
                .then(|| condensable(entries, tail, 2, usize::MAX, false))
                .flatten()
                {
                    self.condensed_pass(entries, range, focus_topic, deadline, report)
                } else {
                    break;
                }
            } else if let Some(range) = over_target
                .then(|| condensable(entries, tail, fanout, fanout, true))
                .flatten()
            {
                self.condensed_pass(entries, range, focus_topic, deadline, report)
            } else if let Some(range) = over_target
                .then(|| leaf_chunk(entries, 0..tail, self.settings.leaf_chunk_tokens))
                .flatten()
            {
                self.leaf_pass(entries, range, focus_topic, deadline, report)
            } else if let Some(range) = over_target
                .then(|| condensable(entries, tail, 2, fanout, true))
                .flatten()
                // Merging different depths deepens the DAG by one level per merge: only when
                // the summaries alone are over their budget.
                .or_else(|| {
                    (over_target && summary_tokens(entries) > self.summary_budget(budget))
                        .then(|| shallowest_run(entries, tail, 2))
                        .flatten()
                })
            {
                self.condensed_pass(entries, range, focus_topic, deadline, report)
            } else {
                break;
            };
            pass?;
            report.passes += 1;
        }
        report.tokens_after = budget.head_tokens + context::tokens(entries);
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(())
    }

    /// Where the verbatim tail starts (`head` the head's tokens); under a size, also sets the
    /// room the summaries before it get.
    fn tail_start(&mut self, entries: &[Entry], budget: Budget, head: u64) -> usize {
        if !budget.sized {
            return fresh_tail_start(entries, self.settings, budget.context_length);
        }
        let size = if head > budget.target_tokens {
            budget.target_tokens
        } else {
            budget.target_tokens - head
        };
        let tail = sized_tail_start(entries, self.settings, size);
        // What stays verbatim: the head, the fresh tail, and the newest user message before it.
        let end = tail.min(entries.len());
        let newest_ask = (0..end)
            .rev()
            .find(|&i| entries[i].is_user_message())
            .filter(|_| !entries[end..].iter().any(Entry::is_user_message))
            .map_or(0, |i| entries[i].tokens);
        // Measured past the head when the head alone is over the size.
        let head = if head > budget.target_tokens { 0 } else { head };
        let verbatim = head + context::tokens(&entries[end..]) + newest_ask;
        self.room = Some(ctxhost_sdk::budget::summary_room(
            budget.target_tokens,
            verbatim,
        ));
        tail
    }

    /// Under a size, the blocks before the tail when one of them has lost standing facts (or
    /// files) that the summaries under it still state, and the room now holds all of theirs
    /// (files with the standing facts): merged, they state them again. Two blocks at least (a
    /// merge takes two).
    fn lossy_run(
        &mut self,
        entries: &[Entry],
        tail: usize,
    ) -> Result<Option<Range<usize>>, EngineError> {
        let Some(range) = condensable(entries, tail, 2, usize::MAX, false) else {
            return Ok(None);
        };
        let (mut lost, mut lost_files) = (false, false);
        let mut standing = Book::default();
        let mut files = FileBook::default();
        let mut frame = 0;
        for summary in entries[range.clone()].iter().filter_map(Entry::summary) {
            lost |= !self
                .held
                .dropped(self.store, self.conv, summary)?
                .is_empty();
            lost_files |= !self
                .held
                .dropped_files(self.store, self.conv, summary)?
                .is_empty();
            let held = self.held.of(self.store, self.conv, summary)?;
            standing.extend(held.items().iter().cloned());
            for state in self.held.files_of(self.store, self.conv, summary)?.files() {
                files.add(state.clone());
            }
            frame = frame.max(summary.block_tokens.saturating_sub(summary.tokens));
        }
        if !lost && !lost_files {
            return Ok(None);
        }
        let room = self.block_room(frame);
        let standing = self.services.count_tokens(&held::section(standing.items()));
        // The files come back only with every standing fact: those go first in a cut.
        let with_files = standing
            + self
                .services
                .count_tokens(&held::files_section(files.files()));
        let merges = (lost && standing <= room) || (lost_files && with_files <= room);
        Ok(merges.then_some(range))
    }

    fn leaf_pass(
        &mut self,
        entries: &mut Vec<Entry>,
        range: Range<usize>,
        focus_topic: Option<&str>,
        deadline: Instant,
        report: &mut Report,
    ) -> Result<(), EngineError> {
        let chunk = &entries[range.clone()];
        let mut sources = Vec::with_capacity(chunk.len());
        let mut rowids = Vec::with_capacity(chunk.len());
        let mut seqs = Vec::with_capacity(chunk.len());
        let mut times = Vec::with_capacity(chunk.len());
        // Tool results are labelled with their tool's name, from the call that asked for them.
        let call_names: HashMap<&str, &str> = chunk
            .iter()
            .filter_map(Entry::message)
            .flat_map(|message| message.tool_calls())
            .map(|call| (call.id(), call.name()))
            .collect();
        for entry in chunk {
            if let EntryKind::Message { stored, message } = &entry.kind {
                sources.extend(summarize::message_sources(stored.seq, message, &call_names));
                rowids.push(stored.rowid);
                seqs.push(stored.seq);
                times.push(stored.created_at);
            }
        }
        let (Some(&first_seq), Some(&last_seq)) = (seqs.iter().min(), seqs.iter().max()) else {
            return Ok(());
        };
        let ids: Vec<String> = rowids.iter().map(i64::to_string).collect();
        let id = summary_id(self.conv, "leaf", &ids);
        if self.reuse(entries, range.clone(), &id, report)? {
            return Ok(());
        }
        let chunk = &entries[range.clone()];
        let source_tokens = context::tokens(chunk);
        let shape = self.block_shape(
            &id,
            SummaryKind::Leaf,
            0,
            (first_seq, last_seq),
            chunk.len() as u64,
        );
        let frame = self.frame_tokens(&shape);
        let previous = range
            .start
            .checked_sub(1)
            .and_then(|i| entries[i].summary())
            .map(|s| s.text.clone());
        let job = Job {
            kind: SummaryKind::Leaf,
            sources: &sources,
            context: previous.as_deref(),
            memory: self.memory,
            // Under a size, the room its block leaves (the setting's size is for the window's
            // own compactions).
            target_tokens: match self.room {
                Some(_) => self.block_room(frame),
                None => self.settings.leaf_summary_tokens,
            }
            .min(source_tokens / 2)
            .max(16),
            source_tokens,
            content_budget: self.settings.leaf_chunk_tokens,
            focus_topic,
        };
        let written = self.write(&job, &shape, deadline, report);
        let min_time = times.iter().copied().min().unwrap_or(0);
        let max_time = times.iter().copied().max().unwrap_or(0);
        let summary = self.summary_row(
            id,
            SummaryKind::Leaf,
            0,
            (first_seq, last_seq),
            (min_time, max_time),
            chunk.len() as u64,
            source_tokens,
            written,
        );
        self.replace(entries, range.clone(), summary, Sources::Messages(rowids))?;
        report.leaf_summaries += 1;
        // A standing value the new leaf replaces must not stay current in an older block of
        // the view: the blocks from that one to the new leaf become one summary, which keeps
        // the newer value only.
        if let Some(run) = superseded_run(entries, range.start) {
            self.condensed_pass(entries, run, focus_topic, deadline, report)?;
        }
        Ok(())
    }

    fn condensed_pass(
        &mut self,
        entries: &mut Vec<Entry>,
        range: Range<usize>,
        focus_topic: Option<&str>,
        deadline: Instant,
        report: &mut Report,
    ) -> Result<(), EngineError> {
        let children: Vec<SummaryRow> = entries[range.clone()]
            .iter()
            .filter_map(|e| e.summary().cloned())
            .collect();
        if children.len() < 2 {
            return Ok(());
        }
        let ids: Vec<String> = children.iter().map(|c| c.id.clone()).collect();
        let id = summary_id(self.conv, "condensed", &ids);
        if self.reuse(entries, range.clone(), &id, report)? {
            return Ok(());
        }
        let mut sources: Vec<Source> = Vec::with_capacity(children.len());
        // What the children state: their texts, and what they lost and get back.
        let mut text_tokens = 0;
        for c in &children {
            let dropped_files = self.held.dropped_files(self.store, self.conv, c)?;
            // What a smaller room cut from the child, read back from the summaries under it,
            // ahead of what it still states.
            let dropped = self.held.dropped(self.store, self.conv, c)?;
            text_tokens += c.tokens;
            let mut sections = String::new();
            if !dropped.is_empty() {
                sections.push_str(&held::section(&dropped));
            }
            // Older than the files the child still lists (a cut keeps the most recently
            // touched), so those, read after, stay the newest.
            if !dropped_files.is_empty() {
                sections.push_str(&held::files_section(&dropped_files));
            }
            let own = c.text.clone();
            let text = if sections.is_empty() {
                own
            } else {
                text_tokens += self.services.count_tokens(&sections);
                format!("{sections}\n{own}")
            };
            sources.push(Source {
                label: format!(
                    "{} · {} depth {} · seq {}-{}",
                    c.id,
                    c.kind.as_str(),
                    c.depth,
                    c.seq_start,
                    c.seq_end
                ),
                text,
            });
        }
        let depth = children.iter().map(|c| c.depth).max().unwrap_or(0) + 1;
        let seqs = (
            children.iter().map(|c| c.seq_start).min().unwrap_or(0),
            children.iter().map(|c| c.seq_end).max().unwrap_or(0),
        );
        let message_count = children.iter().map(|c| c.message_count).sum();
        let shape = self.block_shape(&id, SummaryKind::Condensed, depth, seqs, message_count);
        let frame = self.frame_tokens(&shape);
        let job = Job {
            kind: SummaryKind::Condensed,
            sources: &sources,
            context: None,
            memory: None,
            target_tokens: match self.room {
                // Under a size, the room's one block: its children together were over it.
                Some(_) => self.block_room(frame).min(text_tokens.saturating_sub(1)),
                None => self.settings.condensed_summary_tokens.min(text_tokens / 2),
            }
            .max(16),
            source_tokens: text_tokens,
            content_budget: self.settings.leaf_chunk_tokens,
            focus_topic,
        };
        let written = self.write(&job, &shape, deadline, report);
        let times = (
            children.iter().map(|c| c.time_start).min().unwrap_or(0),
            children.iter().map(|c| c.time_end).max().unwrap_or(0),
        );
        let summary = self.summary_row(
            id,
            SummaryKind::Condensed,
            depth,
            seqs,
            times,
            message_count,
            children.iter().map(|c| c.source_tokens).sum(),
            written,
        );
        self.replace(entries, range, summary, Sources::Children(ids))?;
        report.condensed_summaries += 1;
        Ok(())
    }

    /// Under a caller's size, what the text of one summary block may cost: the room, less
    /// its block's `frame` (what the block costs without its text). Without a size, no limit.
    fn block_room(&self, frame: u64) -> u64 {
        self.room
            .map_or(u64::MAX, |room| room.saturating_sub(frame))
    }

    /// What the block of a summary costs without its text, under a caller's size (0
    /// without one, where nothing reads it).
    fn frame_tokens(&self, shape: &SummaryRow) -> u64 {
        match self.room {
            Some(_) => self.services.count_message_tokens(&blocks::render(shape)),
            None => 0,
        }
    }

    /// A block of a summary without its text: what its frame says of it.
    fn block_shape(
        &self,
        id: &str,
        kind: SummaryKind,
        depth: u32,
        (seq_start, seq_end): (i64, i64),
        message_count: u64,
    ) -> SummaryRow {
        SummaryRow {
            id: id.to_string(),
            conversation_id: self.conv,
            kind,
            depth,
            seq_start,
            seq_end,
            time_start: 0,
            time_end: 0,
            message_count,
            source_tokens: 0,
            tokens: 0,
            block_tokens: 0,
            text: String::new(),
            summarizer: String::new(),
            escalation: 0,
            created_at: 0,
        }
    }

    /// What the summary blocks together may cost before the oldest are merged whatever their
    /// depths (without a caller's size): half of what the threshold leaves beside the head,
    /// and at least a tenth of the window.
    fn summary_budget(&self, budget: Budget) -> u64 {
        (budget.threshold_tokens.saturating_sub(budget.head_tokens) / 2)
            .max(budget.context_length / 10)
    }

    /// Writes `job`'s summary; under a caller's size, one whose block (`shape` with the text)
    /// is larger than the room (a summarizer counts tokens its own way, and an answer may run
    /// a little over) is cut by the budget order, narrative first. The block is counted
    /// whole, as the view will count it: where text and frame meet, a tokenizer may count a
    /// token more or less than it did for each alone.
    fn write(
        &self,
        job: &Job<'_>,
        shape: &SummaryRow,
        deadline: Instant,
        report: &mut Report,
    ) -> summarize::Written {
        let timeout = Duration::from_millis(self.settings.summarizer_timeout_ms);
        let mut written = summarize::write(self.services, job, timeout, deadline);
        if let Some(room) = self.room {
            let fits = |text: &str| {
                let block = SummaryRow {
                    text: text.to_string(),
                    ..shape.clone()
                };
                self.services.count_message_tokens(&blocks::render(&block)) <= room
            };
            if !fits(&written.text) {
                written.text = ctxhost_sdk::budget::trim_summary(&written.text, fits);
            }
        }
        report.summarizer_calls += written.calls;
        report.escalation_level = report.escalation_level.max(written.level);
        report.summarizer = Some(written.summarizer.clone());
        for failure in &written.failures {
            self.services
                .debug(&format!("lcm: summarizer escalation: {failure}"));
            if report.summarizer_failures.len() < MAX_FAILURE_LINES {
                report.summarizer_failures.push(failure.clone());
            }
        }
        written
    }

    #[allow(clippy::too_many_arguments)] // one row's worth of fields, named at the call site
    fn summary_row(
        &self,
        id: String,
        kind: SummaryKind,
        depth: u32,
        (seq_start, seq_end): (i64, i64),
        (time_start, time_end): (i64, i64),
        message_count: u64,
        source_tokens: u64,
        written: summarize::Written,
    ) -> SummaryRow {
        let mut row = SummaryRow {
            id,
            conversation_id: self.conv,
            kind,
            depth,
            seq_start,
            seq_end,
            time_start,
            time_end,
            message_count,
            source_tokens,
            tokens: self.services.count_tokens(&written.text),
            block_tokens: 0,
            text: written.text,
            summarizer: written.summarizer,
            escalation: written.level,
            created_at: now_ms(),
        };
        row.block_tokens = self.services.count_message_tokens(&blocks::render(&row));
        row
    }

    /// The stored summaries over what `entries` hold: leaves with one of its messages as a
    /// source, and summaries with one of its summaries as a child. A summary this run writes
    /// covers messages of `entries`, or summaries of `entries` or written by this run; those it
    /// writes are new (and have no parents), and those it reuses add theirs
    /// ([`reuse`](Self::reuse)). So no other stored summary can be written again by this run.
    fn stored_over(&self, entries: &[Entry]) -> Result<HashSet<String>, EngineError> {
        let messages: Vec<i64> = entries
            .iter()
            .filter_map(|entry| match &entry.kind {
                EntryKind::Message { stored, .. } => Some(stored.rowid),
                EntryKind::Summary(_) => None,
            })
            .collect();
        let summaries: Vec<&str> = entries
            .iter()
            .filter_map(|entry| entry.summary().map(|s| s.id.as_str()))
            .collect();
        self.store.summaries_over(&messages, &summaries)
    }

    /// Swaps the stored summary `id` in for `range` when it exists: the same sources were
    /// summarized before (ids derive from the sources), by a replay or before a resume.
    fn reuse(
        &mut self,
        entries: &mut Vec<Entry>,
        range: Range<usize>,
        id: &str,
        report: &mut Report,
    ) -> Result<bool, EngineError> {
        if !self.stored.contains(id) {
            return Ok(false);
        }
        let Some(summary) = self.store.summary(self.conv, id)? else {
            return Ok(false);
        };
        // Its parents may be written again too, over it.
        self.stored.extend(self.store.summary_parents(id)?);
        let positions: Vec<i64> = entries[range.clone()].iter().map(|e| e.position).collect();
        self.store.put_in_context(&summary, &positions)?;
        let entry = Entry {
            position: positions[0],
            tokens: summary.block_tokens,
            kind: EntryKind::Summary(summary),
        };
        entries.splice(range, [entry]);
        report.reused_summaries += 1;
        Ok(true)
    }

    /// Writes the summary and swaps it in for `range`, in the store and in memory.
    fn replace(
        &mut self,
        entries: &mut Vec<Entry>,
        range: Range<usize>,
        summary: SummaryRow,
        sources: Sources,
    ) -> Result<(), EngineError> {
        let positions: Vec<i64> = entries[range.clone()].iter().map(|e| e.position).collect();
        self.store.insert_summary(&summary, &sources, &positions)?;
        let entry = Entry {
            position: positions[0],
            tokens: summary.block_tokens,
            kind: EntryKind::Summary(summary),
        };
        entries.splice(range, [entry]);
        Ok(())
    }
}

/// The run of adjacent summary blocks from the oldest one holding a standing value that the
/// block at `newest` replaces (same subject, another value), through `newest`.
pub fn superseded_run(entries: &[Entry], newest: usize) -> Option<Range<usize>> {
    let newer = carry::standing_in(&entries.get(newest)?.summary()?.text);
    if newer.is_empty() {
        return None;
    }
    let replaced = |older: &str| {
        carry::standing_in(older).items().iter().any(|old| {
            newer
                .items()
                .iter()
                .any(|new| new.same_subject(old) && !new.value.eq_ignore_ascii_case(&old.value))
        })
    };
    let mut oldest = None;
    let mut start = newest;
    while let Some(summary) = start.checked_sub(1).and_then(|i| entries[i].summary()) {
        start -= 1;
        if replaced(&summary.text) {
            oldest = Some(start);
        }
    }
    oldest.map(|start| start..newest + 1)
}

fn summary_tokens(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .filter(|e| e.summary().is_some())
        .map(|e| e.tokens)
        .sum()
}

/// Where the protected fresh tail begins: the newest `fresh_tail_count` raw messages, moved back
/// so a tool call is never cut from its results, extended back to the newest user message when
/// that fits, and capped at `fresh_tail_max_ratio` of the window (the newest turn always stays).
pub fn fresh_tail_start(entries: &[Entry], settings: &Settings, context_length: u64) -> usize {
    let budget = (context_length > 0)
        .then_some((context_length as f64 * settings.fresh_tail_max_ratio) as u64);
    fresh_tail_within(entries, settings, budget)
}

/// Where the verbatim tail starts under a caller's size, of which `size` tokens are left
/// past the head: the latest turn (the newest user message and all that followed it) whole
/// when it costs at most half of that, so that nothing after the newest user message becomes
/// a block of its own beside the one before it; else the newest turn alone (the newest user
/// message stays verbatim wherever it stands).
pub fn sized_tail_start(entries: &[Entry], settings: &Settings, size: u64) -> usize {
    let newest_turn = fresh_tail_within(entries, settings, Some(0));
    match (0..entries.len())
        .rev()
        .find(|&i| entries[i].is_user_message())
    {
        Some(user)
            if user < newest_turn
                && entries[user..].iter().all(Entry::is_message)
                && context::tokens(&entries[user..]) <= size / 2 =>
        {
            user
        }
        _ => newest_turn,
    }
}

/// [`fresh_tail_start`] with the tail's token budget given (`None`: no budget).
pub fn fresh_tail_within(entries: &[Entry], settings: &Settings, budget: Option<u64>) -> usize {
    let n = entries.len();
    if n == 0 {
        return 0;
    }
    let mut start = n;
    let mut count = 0;
    while start > 0 && count < settings.fresh_tail_count && entries[start - 1].is_message() {
        start -= 1;
        count += 1;
    }
    while start > 0
        && start < n
        && entries[start].is_tool_result()
        && entries[start - 1].is_message()
    {
        start -= 1;
    }
    let Some(budget) = budget else {
        return start;
    };
    let mut tail_tokens = context::tokens(&entries[start..]);
    if let Some(user) = (0..n).rev().find(|&i| entries[i].is_user_message()) {
        let extra = context::tokens(&entries[user.min(start)..start]);
        if user < start
            && entries[user..start].iter().all(Entry::is_message)
            && tail_tokens + extra <= budget
        {
            start = user;
            tail_tokens += extra;
        }
    }
    let mut last_turn = n - 1;
    while last_turn > 0
        && entries[last_turn].is_tool_result()
        && entries[last_turn - 1].is_message()
    {
        last_turn -= 1;
    }
    // Give up the oldest whole turns of the tail until it fits (running total: linear time).
    while start < last_turn && tail_tokens > budget {
        tail_tokens -= entries[start].tokens;
        start += 1;
        while start < last_turn && entries[start].is_tool_result() {
            tail_tokens -= entries[start].tokens;
            start += 1;
        }
    }
    start
}

/// The end of the task when the context list starts with it (nothing of it summarized): 1
/// when its first entry is a user message, else 0.
pub fn task_end(entries: &[Entry]) -> usize {
    usize::from(entries.first().is_some_and(Entry::is_user_message))
}

/// The oldest run of raw messages in `within` (up to the tail), up to `max_tokens` (at least
/// one message), ending on a turn boundary. The newest user message is never part of one: the
/// output contract keeps it in the model's view, verbatim, wherever it stands.
pub fn leaf_chunk(
    entries: &[Entry],
    within: Range<usize>,
    max_tokens: u64,
) -> Option<Range<usize>> {
    let tail = within.end;
    let pinned = (0..entries.len())
        .rev()
        .find(|&i| entries[i].is_user_message());
    let chunkable = |i: usize| entries[i].is_message() && Some(i) != pinned;
    let start = (within.start..tail).find(|&i| chunkable(i))?;
    let mut end = start;
    let mut tokens = 0;
    while end < tail && chunkable(end) {
        if end > start && tokens + entries[end].tokens > max_tokens {
            break;
        }
        tokens += entries[end].tokens;
        end += 1;
    }
    // A tool call's results go with it, even past the budget.
    while end < entries.len() && entries[end].is_tool_result() {
        end += 1;
    }
    Some(start..end)
}

/// A run of `len` consecutive summaries before the tail (fewer, down to 2, when no run is that
/// long) whose deepest member is the shallowest; the oldest such run on ties.
pub fn shallowest_run(entries: &[Entry], tail: usize, len: usize) -> Option<Range<usize>> {
    let limit = tail.min(entries.len());
    (2..=len.max(2)).rev().find_map(|len| {
        (0..limit.saturating_sub(len - 1))
            .filter_map(|start| {
                let run = &entries[start..start + len];
                let deepest = run
                    .iter()
                    .map(|e| e.summary().map(|s| s.depth))
                    .collect::<Option<Vec<u32>>>()?
                    .into_iter()
                    .max()?;
                Some((deepest, start))
            })
            .min()
            .map(|(_, start)| start..start + len)
    })
}

/// The oldest run of `min_len` to `max_len` consecutive summaries before the tail, all of one
/// depth when `same_depth`.
pub fn condensable(
    entries: &[Entry],
    tail: usize,
    min_len: usize,
    max_len: usize,
    same_depth: bool,
) -> Option<Range<usize>> {
    let limit = tail.min(entries.len());
    let mut i = 0;
    while i < limit {
        let Some(first) = entries[i].summary() else {
            i += 1;
            continue;
        };
        let mut end = i + 1;
        while end < limit
            && end - i < max_len
            && entries[end]
                .summary()
                .is_some_and(|s| !same_depth || s.depth == first.depth)
        {
            end += 1;
        }
        if end - i >= min_len.max(2) {
            return Some(i..end);
        }
        i = end;
    }
    None
}
