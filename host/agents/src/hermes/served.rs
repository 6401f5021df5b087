//! The session Hermes' compression call is for, when the call names none. Hermes Agent's
//! compression call carries no session header and no history of its own (one user message
//! quoting the turns to summarise, no system prompt), so its auto-name would be a new session
//! every time. The gateway remembers, per credential, the last sessions it served on the chat
//! wire (the agent's own side calls, such as a title, are sessions too) with the history each
//! was last served, to answer the call from: only the few sessions a call can find hold one
//! (kept per live session, 10,000 long sessions held gigabytes).
//!
//! A call is a session's when the turns it quotes are a run of that session's history: every
//! quoted turn, in order, is the next message of the history as Hermes quotes a message (its
//! role and text, cut as Hermes cuts long texts; an assistant's tool calls by name and a tool
//! result by its call id, since Hermes shortens and summarises those before quoting them). A
//! call that quotes turns no remembered session holds so (another conversation's, or turns the
//! gateway never saw) is no session's.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use ctxhost_sdk::Message;

use super::quoted::{self, Quoted};

/// How many credentials are remembered (the oldest is forgotten first).
const CREDENTIALS: usize = 1024;
/// How many sessions are remembered per credential (the least recently served is forgotten).
const SESSIONS: usize = 4;

/// A session served for a credential.
#[derive(Debug, Clone)]
struct Last {
    session: String,
    history: Vec<Message>,
}

/// Why no session was found for a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfound {
    #[error(
        "no session was served on the chat wire for this credential since the gateway started"
    )]
    NoSession,
    #[error("it quotes no turns in the form Hermes quotes them")]
    NoTurns,
    #[error("the turns it quotes are not a run of the history of session {0} nor of the other sessions last served for this credential")]
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
        let last = Last {
            session: session.to_string(),
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
    /// history holds the quoted turns as a run.
    pub fn find(&self, credential: &str, quote: &str) -> Result<String, Unfound> {
        let recent = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let served = recent.last.get(credential).ok_or(Unfound::NoSession)?;
        let turns = quoted::turns(quote);
        if turns.is_empty() {
            return Err(Unfound::NoTurns);
        }
        served
            .iter()
            .find(|s| holds_run(&s.history, &turns))
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

/// Whether `turns` are, in order, consecutive messages of `history`.
fn holds_run(history: &[Message], turns: &[Quoted<'_>]) -> bool {
    let Some(first) = turns.first() else {
        return false;
    };
    let starts = history.len().saturating_sub(turns.len() - 1);
    (0..starts).any(|start| {
        first.is(&history[start])
            && turns[1..]
                .iter()
                .zip(&history[start + 1..])
                .all(|(turn, message)| turn.is(message))
    })
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

    fn call(turns: &str) -> String {
        format!("You are a summarization agent creating a context checkpoint.\n\nTURNS TO SUMMARIZE:\n{turns}\n\nUse this exact structure:\n\n## Active Task")
    }

    #[test]
    fn a_quote_of_a_run_of_the_last_sessions_turns_finds_it() {
        let recent = RecentSessions::default();
        recent.remember("alice", "s1", history("alpha"));
        assert_eq!(recent.history("alice", "s1"), Some(history("alpha")));
        let quote = call("[USER]: run the rounds of alpha, please\n\n[TOOL RESULT c1]: alpha-0 row 1: the quick brown fox");
        assert_eq!(recent.find("alice", &quote), Ok("s1".to_string()));
        let tail = call("[TOOL RESULT c1]: alpha-0 row 1: the quick brown fox");
        assert_eq!(recent.find("alice", &tail), Ok("s1".to_string()));
        assert_eq!(recent.find("bob", &quote), Err(Unfound::NoSession));
        assert_eq!(
            recent.find("alice", &call("[USER]: something else entirely")),
            Err(Unfound::OtherTurns("s1".to_string()))
        );
        // A tool result Hermes replaced by its summary line before quoting it is the same turn.
        let pruned = call("[USER]: run the rounds of alpha, please\n\n[TOOL RESULT c1]: [terminal] ran `rounds` -> exit 0, 1 lines output");
        assert_eq!(recent.find("alice", &pruned), Ok("s1".to_string()));
        // Out of order, or a text cut where Hermes does not cut: no run, no session.
        let reordered = call("[TOOL RESULT c1]: alpha-0 row 1: the quick brown fox\n\n[USER]: run the rounds of alpha, please");
        assert!(recent.find("alice", &reordered).is_err());
        let cut = call("[USER]: run the rounds of alpha\n\n[TOOL RESULT c1]: alpha-0 row 1");
        assert!(recent.find("alice", &cut).is_err());
        // A quote showing nothing of any session's texts finds none.
        let unseen = call("[USER]: a conversation this gateway never served at all");
        assert!(recent.find("alice", &unseen).is_err());
        assert_eq!(
            recent.find("alice", "no turns at all"),
            Err(Unfound::NoTurns)
        );
        // A side call of the agent's own served since (a title) is a session of its own.
        recent.remember("alice", "title", history("beta"));
        assert_eq!(recent.find("alice", &quote), Ok("s1".to_string()));
        for n in 0..SESSIONS {
            recent.remember("alice", &format!("t{n}"), history("gamma"));
        }
        assert!(recent.find("alice", &quote).is_err());
        assert_eq!(
            recent.history("alice", "s1"),
            None,
            "forgotten with its history"
        );
    }

    #[test]
    fn a_short_session_is_found_only_by_its_own_turns() {
        let recent = RecentSessions::default();
        let short = vec![Message::system("Be brief."), Message::user("hi")];
        recent.remember("alice", "short", short);
        assert_eq!(
            recent.find("alice", &call("[USER]: hi")),
            Ok("short".into())
        );
        assert!(recent
            .find("alice", &call("[USER]: hi there, deploy it"))
            .is_err());
    }

    #[test]
    fn the_oldest_credential_is_forgotten() {
        let recent = RecentSessions::default();
        for n in 0..=CREDENTIALS {
            recent.remember(&format!("key-{n}"), "s", vec![Message::user("hi")]);
        }
        let hi = call("[USER]: hi");
        assert_eq!(recent.find("key-0", &hi), Err(Unfound::NoSession));
        assert_eq!(
            recent.find(&format!("key-{CREDENTIALS}"), &hi),
            Ok("s".into())
        );
    }
}
