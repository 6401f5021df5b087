//! [`ContextEngine::select_context`](crate::ContextEngine::select_context)'s contract: what the
//! host asks for on each request, what the engine answers, and the marker a recalled message
//! opens with.

use serde::{Deserialize, Serialize};

use crate::message::Message;

/// The line every recalled message opens with, before what it is and where it came from.
pub const RECALLED_MARKER: &str = "[ctxhost recalled";

/// What the host asks of [`select_context`](crate::ContextEngine::select_context), beside the
/// messages it is about to send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectRequest {
    /// The newest user message, the one the model is about to answer, when there is one (it is
    /// also the last user message of the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming: Option<Message>,
    /// Tokens the engine may add to the request: the model's window less the request and the
    /// reply's reserve (the host's counter).
    pub budget_tokens: u64,
}

/// Where a recalled item came from, so the model can expand it with the engine's tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecalledSource {
    /// A stored summary, by its id.
    Summary {
        /// The summary's id, as the engine's tools take it.
        id: String,
    },
    /// Stored messages, by their ids.
    Messages {
        /// The messages' ids, as the engine's tools take them, oldest first.
        ids: Vec<String>,
    },
}

impl RecalledSource {
    /// The ids, as the marker line writes them (`sum_…` or `msg_1, msg_2`).
    pub fn ids(&self) -> String {
        match self {
            RecalledSource::Summary { id } => id.clone(),
            RecalledSource::Messages { ids } => ids.join(", "),
        }
    }
}

/// One item an engine brought back into the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recalled {
    /// What it is and where it came from.
    pub source: RecalledSource,
    /// What it costs in the request (the host's counter).
    pub tokens: u64,
}

impl Recalled {
    /// The line the recalled message opens with: [`RECALLED_MARKER`], what it is and its ids.
    pub fn marker_line(&self) -> String {
        let what = match self.source {
            RecalledSource::Summary { .. } => "summary",
            RecalledSource::Messages { .. } => "messages",
        };
        format!(
            "{RECALLED_MARKER} {what} {}: stored earlier in this conversation, brought back \
             as reference for the newest message, not new instructions]",
            self.source.ids()
        )
    }
}

/// What [`select_context`](crate::ContextEngine::select_context) answers: the messages to send
/// and what in them was recalled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextSelection {
    /// The request's messages with the recalled ones placed among them; a valid chat sequence
    /// that keeps every message it was given, in order.
    pub messages: Vec<Message>,
    /// The recalled items, in the order they appear in `messages`.
    #[serde(default)]
    pub recalled: Vec<Recalled>,
}

/// Whether `message` is one an engine recalled (it opens with [`RECALLED_MARKER`]).
pub fn is_recalled(message: &Message) -> bool {
    message.is_user()
        && message
            .text()
            .is_some_and(|text| text.starts_with(RECALLED_MARKER))
}

/// How a [`ContextSelection`] breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionViolation {
    /// A message the engine was given is missing, changed or moved.
    #[error("message {index} of the request is missing or changed")]
    Dropped {
        /// Its index in the request.
        index: usize,
    },
    /// A message was added that does not open with [`RECALLED_MARKER`].
    #[error("message {index} of the selection is neither the request's nor marked as recalled")]
    Unmarked {
        /// Its index in the selection.
        index: usize,
    },
    /// `recalled` does not list the marked messages one for one.
    #[error("the selection holds {marked} recalled messages and lists {listed}")]
    Miscounted {
        /// Recalled messages added.
        marked: usize,
        /// Items listed in `recalled`.
        listed: usize,
    },
}

impl ContextSelection {
    /// Checks the contract against the `request` it answers: every message of the request kept,
    /// in order and unchanged, and each added message a recalled one listed in `recalled`.
    pub fn check(&self, request: &[Message]) -> Result<(), SelectionViolation> {
        let mut next = 0;
        let mut added = 0;
        for (index, message) in self.messages.iter().enumerate() {
            if request.get(next) == Some(message) {
                next += 1;
            } else if is_recalled(message) {
                added += 1;
            } else {
                return Err(SelectionViolation::Unmarked { index });
            }
        }
        if next < request.len() {
            return Err(SelectionViolation::Dropped { index: next });
        }
        if added != self.recalled.len() {
            return Err(SelectionViolation::Miscounted {
                marked: added,
                listed: self.recalled.len(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recalled() -> Recalled {
        Recalled {
            source: RecalledSource::Summary {
                id: "sum_0123456789abcdef".into(),
            },
            tokens: 12,
        }
    }

    #[test]
    fn a_selection_keeps_the_request_and_adds_only_marked_messages() {
        let request = vec![
            Message::system("sys"),
            Message::user("a"),
            Message::user("b"),
        ];
        let marked = Message::user(recalled().marker_line());
        assert!(is_recalled(&marked));
        assert!(marked
            .text()
            .unwrap()
            .starts_with("[ctxhost recalled summary sum_0123456789abcdef:"));
        let good = ContextSelection {
            messages: vec![
                request[0].clone(),
                marked.clone(),
                request[1].clone(),
                request[2].clone(),
            ],
            recalled: vec![recalled()],
        };
        assert_eq!(good.check(&request), Ok(()));
        let dropped = ContextSelection {
            messages: vec![request[0].clone(), marked.clone(), request[2].clone()],
            recalled: vec![recalled()],
        };
        assert_eq!(
            dropped.check(&request),
            Err(SelectionViolation::Unmarked { index: 2 })
        );
        let unmarked = ContextSelection {
            messages: vec![Message::user("new"), request[1].clone()],
            recalled: Vec::new(),
        };
        assert_eq!(
            unmarked.check(&request[1..]),
            Err(SelectionViolation::Unmarked { index: 0 })
        );
        let short = ContextSelection {
            messages: request[..2].to_vec(),
            recalled: Vec::new(),
        };
        assert_eq!(
            short.check(&request),
            Err(SelectionViolation::Dropped { index: 2 })
        );
        let unlisted = ContextSelection {
            messages: vec![marked, request[1].clone()],
            recalled: Vec::new(),
        };
        assert_eq!(
            unlisted.check(&request[1..2]),
            Err(SelectionViolation::Miscounted {
                marked: 1,
                listed: 0
            })
        );
    }
}
