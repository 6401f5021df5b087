//! The session Hermes' compression call is for, when the call names none. Hermes Agent's
//! compression call carries no session header and no history of its own (one user message
//! quoting the turns to summarise, no system prompt), so its auto-name would be a new session
//! every time. The gateway remembers, per credential, the last sessions it served on the chat
//! wire (the agent's own side calls, such as a title, are sessions too), with a few marks of
//! each one's latest messages; a call whose quote holds one of them is that session's. Each
//! one's last history is kept here too, to answer the call from: only the few sessions a call
//! can find hold one (kept per live session, 10,000 long sessions held gigabytes).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ctxhost_sdk::Message;

/// How many credentials are remembered (the oldest is forgotten first).
const CREDENTIALS: usize = 1024;
/// How many sessions are remembered per credential (the least recently served is forgotten).
const SESSIONS: usize = 4;
/// How many of a history's latest messages leave a mark: more than an agent keeps out of its
/// summary as its recent tail (Hermes' `protect_last_n` defaults to 20).
const MARKED_MESSAGES: usize = 48;
/// A mark is the start of a message's text, when the text is long enough to tell it apart
/// (a quoted message may be cut after its head).
const MARK_CHARS: usize = 48;
const MIN_MARK_CHARS: usize = 16;

/// A session served for a credential.
#[derive(Debug, Clone)]
struct Last {
    session: String,
    marks: Vec<String>,
    history: Vec<Message>,
}

/// Why no session was found for a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfound {
    #[error(
        "no session was served on the chat wire for this credential since the gateway started"
    )]
    NoSession,
    #[error("the turns it quotes are not those of session {0} nor of the other sessions last served for this credential")]
    OtherTurns(String),
}

/// The last session served on the chat wire, per credential (bounded).
#[derive(Debug, Default)]
pub struct RecentSessions {
    inner: Mutex<Recent>,
}

#[derive(Debug, Default)]
struct Recent {
    /// Per credential, its sessions, the last served first.
    last: HashMap<String, VecDeque<Last>>,
    /// Credentials, oldest first.
    order: VecDeque<String>,
}

impl RecentSessions {
    /// `session` was just served `history` for `credential`.
    pub fn remember(&self, credential: &str, session: &str, history: Vec<Message>) {
        let marks = history
            .iter()
            .rev()
            .take(MARKED_MESSAGES)
            .filter_map(mark)
            .collect();
        let last = Last {
            session: session.to_string(),
            marks,
            history,
        };
        let mut recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let known = recent.last.contains_key(credential);
        let served = recent.last.entry(credential.to_string()).or_default();
        served.retain(|s| s.session != session);
        served.push_front(last);
        served.truncate(SESSIONS);
        if !known {
            recent.order.push_back(credential.to_string());
            while recent.order.len() > CREDENTIALS {
                if let Some(oldest) = recent.order.pop_front() {
                    recent.last.remove(&oldest);
                }
            }
        }
    }

    /// The history `session` was last served for `credential`, while it is remembered.
    pub fn history(&self, credential: &str, session: &str) -> Option<Vec<Message>> {
        let recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let served = recent.last.get(credential)?;
        let last = served.iter().find(|s| s.session == session)?;
        Some(last.history.clone())
    }

    /// The session a call quoting `quote` is for: the last one served for `credential` whose
    /// latest messages the quote holds the start of, else the last one none of whose messages
    /// is long enough to tell.
    pub fn find(&self, credential: &str, quote: &str) -> Result<String, Unfound> {
        let recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let served = recent.last.get(credential).ok_or(Unfound::NoSession)?;
        served
            .iter()
            .find(|s| s.marks.iter().any(|m| quote.contains(m.as_str())))
            .or_else(|| served.iter().find(|s| s.marks.is_empty()))
            .map(|s| s.session.clone())
            .ok_or_else(|| {
                Unfound::OtherTurns(
                    served
                        .front()
                        .map(|s| s.session.clone())
                        .unwrap_or_default(),
                )
            })
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
        recent.remember("alice", "s1", history("alpha"));
        assert_eq!(recent.history("alice", "s1"), Some(history("alpha")));
        let quote = "[TOOL RESULT c1]: alpha-0 row 1: the quick brown fox";
        assert_eq!(recent.find("alice", quote), Ok("s1".to_string()));
        assert_eq!(recent.find("bob", quote), Err(Unfound::NoSession));
        assert_eq!(
            recent.find("alice", "[USER]: something else entirely"),
            Err(Unfound::OtherTurns("s1".to_string()))
        );
        // A side call of the agent's own served since (a title) is a session of its own.
        recent.remember("alice", "title", history("beta"));
        assert_eq!(recent.find("alice", quote), Ok("s1".to_string()));
        for n in 0..SESSIONS {
            recent.remember("alice", &format!("t{n}"), history("gamma"));
        }
        assert!(recent.find("alice", quote).is_err());
        assert_eq!(
            recent.history("alice", "s1"),
            None,
            "forgotten with its history"
        );
    }

    #[test]
    fn the_oldest_credential_is_forgotten() {
        let recent = RecentSessions::default();
        for n in 0..=CREDENTIALS {
            recent.remember(&format!("key-{n}"), "s", Vec::new());
        }
        assert_eq!(recent.find("key-0", ""), Err(Unfound::NoSession));
        assert_eq!(
            recent.find(&format!("key-{CREDENTIALS}"), ""),
            Ok("s".into())
        );
    }
}
