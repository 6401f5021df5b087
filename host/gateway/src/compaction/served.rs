//! The session an agent's side call is for, when the call names none. Hermes Agent's
//! compression call carries no session header and no history of its own (one user message
//! quoting the turns to summarise, no system prompt), so its auto-name would be a new session
//! every time. The gateway remembers, per credential, the last session it served on the chat
//! wire, with a few marks of that session's latest messages; a call whose quote holds one of
//! them is that session's.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ctxhost_sdk::Message;

/// How many credentials are remembered (the oldest is forgotten first).
const CREDENTIALS: usize = 1024;
/// How many of a history's latest messages leave a mark: more than an agent keeps out of its
/// summary as its recent tail (Hermes' `protect_last_n` defaults to 20).
const MARKED_MESSAGES: usize = 48;
/// A mark is the start of a message's text, when the text is long enough to tell it apart
/// (a quoted message may be cut after its head).
const MARK_CHARS: usize = 48;
const MIN_MARK_CHARS: usize = 16;

/// The last session served for one credential.
#[derive(Debug, Clone)]
struct Last {
    session: String,
    marks: Vec<String>,
}

/// Why no session was found for a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfound {
    #[error(
        "no session was served on the chat wire for this credential since the gateway started"
    )]
    NoSession,
    #[error(
        "the turns it quotes are not those of session {0}, the last one served for this credential"
    )]
    OtherTurns(String),
}

/// The last session served on the chat wire, per credential (bounded).
#[derive(Debug, Default)]
pub struct RecentSessions {
    inner: Mutex<Recent>,
}

#[derive(Debug, Default)]
struct Recent {
    last: HashMap<String, Last>,
    /// Credentials, oldest first.
    order: VecDeque<String>,
}

impl RecentSessions {
    /// `session` was just served `history` for `credential`.
    pub fn remember(&self, credential: &str, session: &str, history: &[Message]) {
        let marks = history
            .iter()
            .rev()
            .take(MARKED_MESSAGES)
            .filter_map(mark)
            .collect();
        let last = Last {
            session: session.to_string(),
            marks,
        };
        let mut recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if recent.last.insert(credential.to_string(), last).is_none() {
            recent.order.push_back(credential.to_string());
            while recent.order.len() > CREDENTIALS {
                if let Some(oldest) = recent.order.pop_front() {
                    recent.last.remove(&oldest);
                }
            }
        }
    }

    /// The session a call quoting `quote` is for: the last one served for `credential`, when
    /// the quote holds the start of one of its latest messages (or none of them is long
    /// enough to tell).
    pub fn find(&self, credential: &str, quote: &str) -> Result<String, Unfound> {
        let recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let last = recent.last.get(credential).ok_or(Unfound::NoSession)?;
        if last.marks.is_empty() || last.marks.iter().any(|m| quote.contains(m.as_str())) {
            Ok(last.session.clone())
        } else {
            Err(Unfound::OtherTurns(last.session.clone()))
        }
    }
}

/// The start of a message's text, if it is long enough to tell the message apart.
fn mark(message: &Message) -> Option<String> {
    let text = message.content_text();
    let text = text.trim();
    (text.chars().count() >= MIN_MARK_CHARS).then(|| text.chars().take(MARK_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(word: &str) -> Vec<Message> {
        vec![
            Message::system("be brief"),
            Message::user(format!("run the rounds of {word}, please")),
            Message::tool_result("c1", format!("{word}-0 row 1: the quick brown fox")),
        ]
    }

    #[test]
    fn a_quote_of_the_last_sessions_turns_finds_it() {
        let recent = RecentSessions::default();
        recent.remember("alice", "s1", &history("alpha"));
        let quote = "[TOOL RESULT c1]: alpha-0 row 1: the quick brown fox";
        assert_eq!(recent.find("alice", quote), Ok("s1".to_string()));
        assert_eq!(recent.find("bob", quote), Err(Unfound::NoSession));
        assert_eq!(
            recent.find("alice", "[USER]: something else entirely"),
            Err(Unfound::OtherTurns("s1".to_string()))
        );
        recent.remember("alice", "s2", &history("beta"));
        assert!(recent.find("alice", quote).is_err());
    }

    #[test]
    fn the_oldest_credential_is_forgotten() {
        let recent = RecentSessions::default();
        for n in 0..=CREDENTIALS {
            recent.remember(&format!("key-{n}"), "s", &[]);
        }
        assert_eq!(recent.find("key-0", ""), Err(Unfound::NoSession));
        assert_eq!(
            recent.find(&format!("key-{CREDENTIALS}"), ""),
            Ok("s".into())
        );
    }
}
