//! Planting: the facts' sentences spread over a session's user messages, and the session cut
//! into the parts the rounds feed the engine one at a time.

use ctxhost_sdk::Message;

use super::facts::{Fact, Statement};
use super::rng::Rng;
use super::style::{self, Style};
use super::QualityError;

/// Where one sentence went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The fact ([`Fact::id`]).
    pub fact: usize,
    /// The sentence superseding the fact's first value.
    pub supersedes: bool,
    /// Index of the message that states it (a user message, or for a file the assistant's
    /// tool call).
    pub message: usize,
}

/// A session with its facts planted.
#[derive(Debug, Clone)]
pub struct Planted {
    /// The session with the sentences inserted.
    pub messages: Vec<Message>,
    /// The facts planted.
    pub facts: Vec<Fact>,
    /// Where each sentence went.
    pub placements: Vec<Placement>,
}

impl Planted {
    /// Where the sentence planting `fact` (or superseding it) went.
    pub fn placement(&self, fact: usize, supersedes: bool) -> Option<usize> {
        self.placements
            .iter()
            .find(|p| p.fact == fact && p.supersedes == supersedes)
            .map(|p| p.message)
    }
}

/// Plants the facts of `seed` in `session` in the harness's own phrasing
/// ([`plant_in_style`] with [`Style::Harness`]).
pub fn plant(session: &[Message], seed: u64) -> Result<Planted, QualityError> {
    plant_in_style(session, seed, Style::Harness)
}

/// Plants the facts of `seed` in `session`, phrased in `style`, spread evenly from start to end
/// over the plain-text user messages but the first (which engines protect as the task). In the
/// harness's phrasing each sentence is a user message right after such a message; in the other
/// families each statement is a turn of its own (the user's message or a tool call, then an
/// acknowledgement and filler) right before one. First values land in the first half, updates
/// in the second, so an update always comes after the value it supersedes.
pub fn plant_in_style(
    session: &[Message],
    seed: u64,
    style: Style,
) -> Result<Planted, QualityError> {
    let mut rng = Rng::new(seed);
    let (facts, sentences) = style::plan(style, &mut rng);
    let first_user = session.iter().position(Message::is_user);
    let candidates: Vec<usize> = session
        .iter()
        .enumerate()
        .filter(|(i, m)| m.is_user() && m.text().is_some() && Some(*i) != first_user)
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return Err(QualityError::NowhereToPlant);
    }
    let (firsts, updates): (Vec<_>, Vec<_>) = sentences.into_iter().partition(|s| !s.supersedes);
    let superseded: Vec<usize> = updates.iter().map(|s| s.fact).collect();
    let (mut early, mut late): (Vec<_>, Vec<_>) = firsts
        .into_iter()
        .partition(|s| superseded.contains(&s.fact));
    // Each half holds half the sentences: the superseded facts' first values and others early,
    // the remaining first values and the updates late.
    let total = early.len() + late.len() + updates.len();
    rng.shuffle(&mut late);
    let moved = (total / 2).saturating_sub(early.len()).min(late.len());
    early.extend(late.drain(..moved));
    late.extend(updates);
    rng.shuffle(&mut early);
    rng.shuffle(&mut late);
    let order: Vec<_> = early.into_iter().chain(late).collect();
    // Each statement is a message of its own next to a user message of the session: a user
    // stating something between turns, the way people do. Appended to the session's own user
    // text it could land inside a tool observation (agents such as SWE-agent send their
    // observations as user messages), which no reader takes for the user's word.
    let mut at: Vec<Vec<Statement>> = vec![Vec::new(); session.len()];
    for (slot, sentence) in order.into_iter().enumerate() {
        at[candidates[slot * candidates.len() / total]].push(sentence);
    }
    let before = style.turns_of_its_own();
    let mut messages = Vec::with_capacity(session.len() + total);
    let mut placements = Vec::with_capacity(total);
    let mut insert = |messages: &mut Vec<Message>, statements: Vec<Statement>| {
        for statement in statements {
            placements.push(Placement {
                fact: statement.fact,
                supersedes: statement.supersedes,
                message: messages.len() + statement.states,
            });
            messages.extend(statement.messages);
        }
    };
    for (message, statements) in session.iter().zip(at) {
        if before {
            insert(&mut messages, statements);
            messages.push(message.clone());
        } else {
            messages.push(message.clone());
            insert(&mut messages, statements);
        }
    }
    Ok(Planted {
        messages,
        facts,
        placements,
    })
}

/// Cuts `messages` into `parts` runs of about equal tokens, each cut just before a user
/// message (a turn boundary: no tool call is parted from its results). Returns where each part
/// ends (exclusive); the last ends at `messages.len()`.
pub fn split(
    messages: &[Message],
    parts: usize,
    count: impl Fn(&Message) -> u64,
) -> Result<Vec<usize>, QualityError> {
    let mut prefix = Vec::with_capacity(messages.len() + 1);
    prefix.push(0u64);
    for message in messages {
        prefix.push(prefix.last().copied().unwrap_or(0) + count(message));
    }
    let total = prefix[messages.len()];
    let mut ends = Vec::with_capacity(parts);
    let mut previous = 0;
    for k in 1..parts {
        let goal = total * k as u64 / parts as u64;
        let cut = (previous + 1..messages.len())
            .find(|&i| prefix[i] >= goal && messages[i].is_user())
            .ok_or(QualityError::TooShort { parts })?;
        ends.push(cut);
        previous = cut;
    }
    ends.push(messages.len());
    if previous >= messages.len() {
        return Err(QualityError::TooShort { parts });
    }
    Ok(ends)
}
