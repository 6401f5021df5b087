//! One session's conversation as the gateway keeps it: the *lineage* (a digest of every message
//! the client has sent, in order) and the *view* (what the engine made of the lineage's first
//! `covered` messages at the last compression). A request whose history extends the lineage
//! goes upstream as the view plus the messages after `covered`; so does a history the agent
//! compacted around the gateway's own handoff (it stands for the view); anything else starts a
//! new lineage. The view only changes at a compression, so the prefix the provider sees is
//! byte-stable in between and its prompt cache keeps hitting.

use std::fmt;

use ctxhost_sdk::{Content, Message};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use sha2::{Digest as _, Sha256};

/// A message's identity in a lineage: what the provider's model sees of it, so what agents
/// re-serialize or drop when they resume a session (recorded from each real agent before and
/// after a resume: `host/agents/tests/fixtures/`) does not change it:
/// - a `null` beside an empty content, fields the gateway does not read (Anthropic's
///   `cache_control`, lifted out of the blocks by the wire; Claude Code moves it every turn);
/// - text given as a string or as an array of plain text parts (Claude Code sends its latest
///   prompt as a text block with a cache breakpoint, then as a string the turn after; one text
///   block is what a string is to every provider);
/// - a tool result's `name`: no wire shows it to the model (Anthropic and Responses have no
///   such field, OpenAI ignores it on `tool` messages), and Hermes Agent drops it when it
///   resumes a session (`hermes chat --continue`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn of(message: &Message) -> Self {
        // Fed straight from the fields (each with its length, so no two splits collide):
        // every request hashes its whole history, so no JSON is built here but for content
        // parts that may be plain text.
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(message.role().as_bytes());
        match message.content() {
            Content::Text(text) if !text.is_empty() => {
                field(b"t");
                field(text.as_bytes());
            }
            Content::Json(json) => match plain_texts(json) {
                Some(texts) if texts.len() == 1 && !texts[0].is_empty() => {
                    field(b"t");
                    field(texts[0].as_bytes());
                }
                _ => {
                    field(b"j");
                    field(json.as_bytes());
                }
            },
            // Absent, null and "" are the same message to a client library.
            _ => field(b"-"),
        }
        for call in message.tool_calls() {
            field(call.id().as_bytes());
            field(call.name().as_bytes());
            field(call.arguments().as_bytes());
        }
        field(message.tool_call_id().unwrap_or("\0").as_bytes());
        let name = match message.is_tool_result() {
            true => None,
            false => message.name(),
        };
        field(name.unwrap_or("\0").as_bytes());
        Digest(hasher.finalize().into())
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn from_hex(text: &str) -> Option<Self> {
        if text.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Digest(bytes))
    }
}

/// The texts of content parts that are plain text parts only (`{"type": "text", "text"}`,
/// nothing else beside), in order; `None` for any other content.
fn plain_texts(json: &str) -> Option<Vec<String>> {
    // Most parts are not plain text (tool results, images): told without parsing.
    if !json.trim_start().starts_with('[') || !json.contains("\"text\"") {
        return None;
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Part {
        #[serde(rename = "type")]
        kind: String,
        text: String,
    }
    let parts: Vec<Part> = serde_json::from_str(json).ok()?;
    parts
        .into_iter()
        .map(|part| (part.kind == "text").then_some(part.text))
        .collect()
}

impl Digest {
    /// A handoff text's, trimmed (what a client keeps of it whole).
    pub fn of_handoff(text: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"ctxhost handoff text\0");
        hasher.update(text.trim().as_bytes());
        Digest(hasher.finalize().into())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &self.hex()[..12])
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Digest::from_hex(&text).ok_or_else(|| serde::de::Error::custom("not a sha256 digest"))
    }
}

/// Messages the client never saw that belong in the upstream history in place of one it did:
/// the engine's tool calls and their results, which the gateway answered itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Splice {
    /// The assistant message as the client received it.
    pub visible: Digest,
    /// What the upstream history holds instead (it ends with the client's tool calls, if any).
    pub messages: Vec<Message>,
}

/// The lineage and the view of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    lineage: Vec<Digest>,
    view: Vec<Message>,
    /// How many lineage messages the view stands for.
    covered: usize,
    /// Bumped at every compression, so a store writes the view only when it changed.
    view_version: u64,
    splices: Vec<Splice>,
    /// The text handoff last handed out, and the view it stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handed_out: Option<HandedOut>,
}

/// A text handoff the gateway handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct HandedOut {
    view_version: u64,
    text: Digest,
}

/// What a request's history is to the lineage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continuity {
    /// The first request of the session.
    First,
    /// It starts with every message of the lineage (a retry adds none).
    Extends,
    /// The agent compacted its history around the gateway's handoff of the current view: the
    /// lineage goes on from it, the view standing for what the handoff replaced.
    Compacted,
    /// It takes up an older point of the lineage (the user resumed an earlier session, or
    /// went back to an earlier prompt): the lineage goes on from there, the view still
    /// standing for the messages it covers (all of them in the history's start).
    Rewound,
    /// It does not (the client edited, branched or compacted it on its own): a new lineage.
    Diverged,
}

/// Where a request's history leaves the lineage, as said when it starts a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    /// The first message of the history that is not the lineage's (its index).
    pub at: usize,
    /// Its role, if the history has a message there (else the history stopped short).
    pub role: Option<String>,
    /// How many messages the lineage had.
    pub lineage: usize,
}

/// Where an agent's compacted history takes up the handoff the gateway gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed {
    /// How many of the history's first messages the handoff stands for (itself included).
    pub at: usize,
    /// The version of the view the handoff named.
    pub view_version: u64,
    /// For a handoff only its rendering tells (a client no agent profile tells), its text's
    /// digest: it resumes the view only as the very text handed out for it
    /// ([`Conversation::handed_out`]).
    pub text: Option<Digest>,
}

impl Conversation {
    /// Takes in the client's full history; returns how it relates to the lineage and the
    /// messages to send upstream (the view, then the client's messages after it, with the
    /// gateway's own tool exchanges spliced back in). `resumed`: where the history takes up a
    /// handoff of this session's view, if it does.
    pub fn advance(
        &mut self,
        history: &[Message],
        resumed: Option<Resumed>,
    ) -> (Continuity, Vec<Message>) {
        let digests: Vec<Digest> = history.iter().map(Digest::of).collect();
        // A handoff of an older view stands for less than the view now covers: not taken up.
        let resumed =
            resumed.filter(|r| r.view_version == self.view_version && r.at <= history.len());
        let common = self.common_prefix(&digests);
        let continuity = if self.lineage.is_empty() && self.view.is_empty() {
            Continuity::First
        } else if common == self.lineage.len() {
            Continuity::Extends
        } else if resumed.is_some() {
            Continuity::Compacted
        } else if self.takes_up_older_point(history, common) {
            Continuity::Rewound
        } else {
            Continuity::Diverged
        };
        match (continuity, resumed) {
            (Continuity::Diverged, _) => {
                self.view.clear();
                self.covered = 0;
                self.splices.clear();
                self.view_version += 1;
            }
            (Continuity::Rewound, _) => {
                // What was prepared for the messages after the point taken up is not this
                // history's: a new version of the view, so nothing prepared is taken in.
                self.view_version += 1;
                let live = &digests[self.covered..];
                self.splices.retain(|s| live.contains(&s.visible));
            }
            (Continuity::Compacted, Some(resumed)) => {
                self.covered = resumed.at + self.kept_tail(&digests[resumed.at..]);
                self.splices.clear();
            }
            _ => {}
        }
        self.lineage = digests;
        (continuity, self.upstream(history))
    }

    /// How many of `digests`' first messages are the lineage's.
    fn common_prefix(&self, digests: &[Digest]) -> usize {
        self.lineage
            .iter()
            .zip(digests)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Whether `history`, whose first `common` messages are the lineage's, takes up an older
    /// point of it: the shared start holds the view's messages and a user's message (a
    /// conversation of its own, not just the same system prompt), and the history goes on
    /// from there with the user's words (a new prompt) or not at all.
    fn takes_up_older_point(&self, history: &[Message], common: usize) -> bool {
        let shared = &history[..common];
        common >= self.covered
            && shared.iter().any(Message::is_user)
            && history.get(common).is_none_or(Message::is_user)
    }

    /// Where `history` leaves the lineage, if it does not extend it.
    pub fn departure(&self, history: &[Message]) -> Option<Departure> {
        let digests: Vec<Digest> = history.iter().map(Digest::of).collect();
        let at = self.common_prefix(&digests);
        (at < self.lineage.len()).then(|| Departure {
            at,
            role: history.get(at).map(|m| m.role().to_string()),
            lineage: self.lineage.len(),
        })
    }

    /// How many of the messages after an agent's handoff (`after`) are the last messages of
    /// the lineage the view stands for, kept by the agent as its recent tail (Hermes keeps its
    /// last turns after the summary): the view stands for them too, so they do not go upstream
    /// twice. Only a run that ends the old lineage, in order, counts.
    fn kept_tail(&self, after: &[Digest]) -> usize {
        let stood_for = &self.lineage[..self.covered.min(self.lineage.len())];
        if stood_for.len() < self.lineage.len() {
            return 0;
        }
        (1..=after.len().min(stood_for.len()))
            .rev()
            .find(|&k| after[..k] == stood_for[stood_for.len() - k..])
            .unwrap_or(0)
    }

    /// What goes upstream for `history` (the lineage as last advanced): the view, then the
    /// client's messages after it, with the gateway's own tool exchanges spliced back in.
    pub fn upstream(&self, history: &[Message]) -> Vec<Message> {
        self.upstream_of(history, &self.lineage)
    }

    /// What [`Self::advance`] would send upstream for `history`, without taking it in: `None`
    /// when `history` does not extend the lineage (it would start a new one).
    pub fn peek(&self, history: &[Message]) -> Option<Vec<Message>> {
        let digests: Vec<Digest> = history.iter().map(Digest::of).collect();
        let extends = digests.len() >= self.lineage.len()
            && digests[..self.lineage.len()] == self.lineage[..];
        extends.then(|| self.upstream_of(history, &digests))
    }

    /// The view, then `history` after it (`digests` are its messages'), spliced.
    fn upstream_of(&self, history: &[Message], digests: &[Digest]) -> Vec<Message> {
        let mut upstream = self.view.clone();
        for (message, digest) in history[self.covered..].iter().zip(&digests[self.covered..]) {
            match self.splices.iter().find(|s| s.visible == *digest) {
                Some(splice) => upstream.extend(splice.messages.iter().cloned()),
                None => upstream.push(message.clone()),
            }
        }
        upstream
    }

    /// The engine compressed what was sent for the lineage so far into `view`.
    pub fn compressed(&mut self, view: Vec<Message>) {
        self.compressed_at(self.lineage.len(), view);
    }

    /// The engine compressed what was sent for the lineage's first `base` messages into
    /// `view` (a compression prepared in the background, while the lineage grew on).
    pub fn compressed_at(&mut self, base: usize, view: Vec<Message>) {
        self.view = view;
        self.covered = base.min(self.lineage.len());
        self.view_version += 1;
        // Splices the view now stands for are no longer needed.
        let live = &self.lineage[self.covered..];
        self.splices.retain(|s| live.contains(&s.visible));
    }

    /// Remembers what the upstream history holds in place of a message the client receives.
    pub fn splice(&mut self, visible: &Message, messages: Vec<Message>) {
        let visible = Digest::of(visible);
        self.splices.retain(|s| s.visible != visible);
        self.splices.push(Splice { visible, messages });
    }

    pub fn view(&self) -> &[Message] {
        &self.view
    }

    /// The view's messages the client never sent: what the engine wrote there (its summaries)
    /// and the gateway's own tool exchanges. Known from the lineage alone, so a gateway that
    /// restarted, or another one sharing the store, knows them too.
    pub fn unsent(&self) -> impl Iterator<Item = &Message> {
        let sent: std::collections::HashSet<&Digest> = self.lineage.iter().collect();
        self.view
            .iter()
            .filter(move |message| !sent.contains(&Digest::of(message)))
    }

    pub fn view_version(&self) -> u64 {
        self.view_version
    }

    /// The text handoff `text` is handed out for the current view.
    pub fn hand_out(&mut self, text: &str) {
        self.handed_out = Some(HandedOut {
            view_version: self.view_version,
            text: Digest::of_handoff(text),
        });
    }

    /// Whether the handoff `resumed` takes up is one this session handed out: any of its
    /// agents' shapes, or a text only its rendering tells that is the one last handed out
    /// for the view it names.
    pub fn handed_out(&self, resumed: &Resumed) -> bool {
        resumed.text.is_none_or(|text| {
            self.handed_out
                == Some(HandedOut {
                    view_version: resumed.view_version,
                    text,
                })
        })
    }

    /// The turn the lineage stands at: a digest of every message the client has sent, the
    /// same on every replica and for every retry of one request (the turn ledger's key).
    pub fn turn_id(&self) -> String {
        let mut hasher = Sha256::new();
        for digest in &self.lineage {
            hasher.update(digest.0);
        }
        Digest(hasher.finalize().into()).hex()
    }

    pub fn lineage_len(&self) -> usize {
        self.lineage.len()
    }

    pub fn covered(&self) -> usize {
        self.covered
    }

    pub fn pending_splices(&self) -> usize {
        self.splices.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_sdk::ToolCall;
    use serde_json::Value;

    fn history(n: usize) -> Vec<Message> {
        let mut messages = vec![Message::system("be brief")];
        for i in 0..n {
            messages.push(Message::user(format!("question {i}")));
            messages.push(Message::assistant(format!("answer {i}")));
        }
        messages
    }

    #[test]
    fn extending_sends_the_view_and_the_new_messages() {
        let mut conversation = Conversation::default();
        let (continuity, upstream) = conversation.advance(&history(2), None);
        assert_eq!(continuity, Continuity::First);
        assert_eq!(upstream, history(2));
        conversation.compressed(vec![Message::system("be brief"), Message::user("summary")]);
        let mut next = history(2);
        next.push(Message::user("more"));
        let (continuity, upstream) = conversation.advance(&next, None);
        assert_eq!(continuity, Continuity::Extends);
        assert_eq!(
            upstream,
            vec![
                Message::system("be brief"),
                Message::user("summary"),
                Message::user("more")
            ]
        );
        // A retry of the same request sends the same thing.
        assert_eq!(conversation.advance(&next, None).1, upstream);
    }

    #[test]
    fn peeking_sends_what_advancing_would_and_changes_nothing() {
        let mut conversation = Conversation::default();
        conversation.advance(&history(2), None);
        conversation.compressed(vec![Message::user("summary")]);
        let before = conversation.clone();
        let mut next = history(2);
        next.push(Message::user("more"));
        let peeked = conversation.peek(&next);
        assert_eq!(conversation, before);
        assert_eq!(
            peeked,
            Some(vec![Message::user("summary"), Message::user("more")])
        );
        assert_eq!(conversation.peek(&history(1)), None);
        assert_eq!(peeked, Some(conversation.advance(&next, None).1));
    }

    #[test]
    fn an_edited_history_starts_a_new_lineage() {
        let mut conversation = Conversation::default();
        conversation.advance(&history(3), None);
        conversation.compressed(vec![Message::user("summary")]);
        let mut edited = history(3);
        edited[1] = Message::user("a different question");
        let (continuity, upstream) = conversation.advance(&edited, None);
        assert_eq!(continuity, Continuity::Diverged);
        assert_eq!(upstream, edited);
        assert!(conversation.view().is_empty());
    }

    #[test]
    fn a_history_compacted_around_the_handoff_continues_the_lineage() {
        let mut conversation = Conversation::default();
        conversation.advance(&history(3), None);
        conversation.compressed(vec![Message::system("be brief"), Message::user("summary")]);
        let version = conversation.view_version();
        // The agent keeps its first question and puts the handoff after it.
        let compacted = vec![
            Message::system("be brief"),
            Message::user("question 0"),
            Message::user("handoff ctxhost.v1..."),
            Message::user("next"),
        ];
        let resumed = Resumed {
            at: 3,
            view_version: version,
            text: None,
        };
        let (continuity, upstream) = conversation.advance(&compacted, Some(resumed));
        assert_eq!(continuity, Continuity::Compacted);
        assert_eq!(
            upstream,
            vec![
                Message::system("be brief"),
                Message::user("summary"),
                Message::user("next")
            ]
        );
        let mut more = compacted.clone();
        more.push(Message::assistant("done"));
        assert_eq!(conversation.advance(&more, None).0, Continuity::Extends);
        // A handoff of a view since replaced is not taken up.
        conversation.compressed(vec![Message::user("newer summary")]);
        let (continuity, _) = conversation.advance(&compacted, Some(resumed));
        assert_eq!(continuity, Continuity::Diverged);
    }

    #[test]
    fn a_text_only_its_rendering_tells_is_handed_out_only_as_the_text_last_given() {
        let mut conversation = Conversation::default();
        conversation.advance(&history(3), None);
        conversation.compressed(vec![Message::user("summary")]);
        let version = conversation.view_version();
        let resumed = |text: &str| Resumed {
            at: 2,
            view_version: version,
            text: Some(Digest::of_handoff(text)),
        };
        let given = "summary\n\n[ctxhost handoff: ctxhost.v1.ab.1.cd]";
        assert!(!conversation.handed_out(&resumed(given)), "none given yet");
        conversation.hand_out(given);
        // What a client keeps of it whole, surrounding whitespace aside.
        assert!(conversation.handed_out(&resumed(&format!("\n{given}\n"))));
        // Other words ending with its marker line are not it.
        let pasted = "what is this?\n\n[ctxhost handoff: ctxhost.v1.ab.1.cd]";
        assert!(!conversation.handed_out(&resumed(pasted)));
        // Nor is it once the view it stood for is replaced.
        conversation.compressed(vec![Message::user("newer summary")]);
        let stale = Resumed {
            view_version: conversation.view_version(),
            ..resumed(given)
        };
        assert!(!conversation.handed_out(&stale));
        // An agent's own shape needs no text.
        assert!(conversation.handed_out(&Resumed {
            text: None,
            ..stale
        }));
        // It outlives a store.
        let stored: Conversation =
            serde_json::from_str(&serde_json::to_string(&conversation).unwrap()).unwrap();
        assert_eq!(stored, conversation);
    }

    #[test]
    fn a_recent_tail_kept_after_the_handoff_is_not_sent_twice() {
        let mut conversation = Conversation::default();
        let old = history(3);
        conversation.advance(&old, None);
        conversation.compressed(vec![Message::system("be brief"), Message::user("summary")]);
        // Hermes keeps its first messages, puts the summary after them, then its recent tail:
        // the old lineage's last two messages, and what came since.
        let mut compacted = vec![
            Message::system("be brief"),
            Message::user("question 0"),
            Message::user("handoff ctxhost.v1..."),
        ];
        compacted.extend(old[old.len() - 2..].iter().cloned());
        compacted.push(Message::user("question 3"));
        let resumed = Resumed {
            at: 3,
            view_version: conversation.view_version(),
            text: None,
        };
        let (continuity, upstream) = conversation.advance(&compacted, Some(resumed));
        assert_eq!(continuity, Continuity::Compacted);
        assert_eq!(
            upstream,
            vec![
                Message::system("be brief"),
                Message::user("summary"),
                Message::user("question 3")
            ]
        );
        // A message after the handoff that merely equals an older one is sent.
        let mut conversation = Conversation::default();
        conversation.advance(&old, None);
        conversation.compressed(vec![Message::user("summary")]);
        let mut compacted = compacted[..3].to_vec();
        compacted.push(Message::user("question 1"));
        let resumed = Resumed {
            at: 3,
            view_version: conversation.view_version(),
            text: None,
        };
        let (_, upstream) = conversation.advance(&compacted, Some(resumed));
        assert_eq!(
            upstream,
            vec![Message::user("summary"), Message::user("question 1")]
        );
    }

    #[test]
    fn reserialized_messages_keep_their_identity() {
        let mut with_nulls = Message::assistant("");
        with_nulls.set_extra_field("refusal", Some(Value::Null));
        let mut plain = Message::assistant("");
        plain.set_content_json(&Value::Null);
        assert_eq!(Digest::of(&with_nulls), Digest::of(&plain));
        assert_ne!(Digest::of(&plain), Digest::of(&Message::user("")));
    }

    #[test]
    fn splices_restore_the_gateways_tool_exchange() {
        let mut conversation = Conversation::default();
        let mut sent = history(1);
        sent.push(Message::user("find it"));
        conversation.advance(&sent, None);
        let visible = Message::assistant_tool_calls(vec![ToolCall::new("c2", "shell", "{}")]);
        let hidden = vec![
            Message::assistant_tool_calls(vec![
                ToolCall::new("c1", "lcm_grep", "{}"),
                ToolCall::new("c2", "shell", "{}"),
            ]),
            Message::tool_result("c1", "found"),
        ];
        conversation.splice(&visible, hidden.clone());
        sent.push(visible);
        sent.push(Message::tool_result("c2", "ok"));
        let (_, upstream) = conversation.advance(&sent, None);
        let tail = &upstream[upstream.len() - 3..];
        assert_eq!(tail[..2], hidden[..]);
        assert_eq!(tail[2], Message::tool_result("c2", "ok"));
        let digest = serde_json::to_string(&Digest::of(&tail[2])).unwrap();
        assert_eq!(
            serde_json::from_str::<Digest>(&digest).unwrap(),
            Digest::of(&tail[2])
        );
    }
}
