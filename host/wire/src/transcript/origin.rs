//! Where each message read from a line-based log (Claude Code, Codex) came from, kept on the
//! message itself as an extra field, so that the log can be written back: the lines of messages
//! an engine kept unchanged go back verbatim, the others are rebuilt from the messages.

use ctxhost_sdk::Message;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The messages read from some lines of a log.
#[derive(Debug, Clone)]
pub(super) struct Group {
    /// Positions (among the file's non-empty lines) of the lines the messages were read from.
    pub members: Vec<usize>,
    /// Positions on the conversation's chain (Claude Code's `parentUuid` chain, with the system
    /// and progress entries between messages), up to the last member.
    pub chain: Vec<usize>,
    pub messages: Vec<Message>,
}

/// The lines a group of messages stands for, as stored on its first message.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Origin {
    /// Every line after the previous group's last member, up to this group's last member.
    pub lines: Vec<Value>,
    /// Which of `lines` the messages were read from.
    pub members: Vec<usize>,
    /// Which of `lines` are on the conversation's chain.
    pub chain: Vec<usize>,
    /// The lines after the last group (stored on the last group only).
    pub after: Vec<Value>,
}

impl Origin {
    pub fn member_lines(&self) -> Vec<&Value> {
        self.members
            .iter()
            .filter_map(|&at| self.lines.get(at))
            .collect()
    }

    pub fn is_member(&self, at: usize) -> bool {
        self.members.contains(&at)
    }

    pub fn is_chain(&self, at: usize) -> bool {
        self.chain.contains(&at)
    }
}

/// Consecutive messages of one group (or one message of none), with the origin field removed.
#[derive(Debug, Clone)]
pub(super) struct Run {
    /// The group's lines; `None` for a message an engine wrote, or a group whose first message
    /// (the one holding the lines) was dropped.
    pub origin: Option<Origin>,
    pub messages: Vec<Message>,
}

impl Run {
    /// Whether the run holds exactly the messages its lines give: then the lines go back as
    /// they were.
    pub fn is_intact(&self, convert: impl Fn(&[&Value]) -> Option<Vec<Message>>) -> bool {
        self.origin.as_ref().is_some_and(|origin| {
            convert(&origin.member_lines()).is_some_and(|messages| messages == self.messages)
        })
    }
}

/// Stores each group's lines on its messages under `key` (see [`Origin`]); groups come in file
/// order. Lines outside every group's span are stored on the last group as `after`.
pub(super) fn attach(key: &str, lines: &[Value], groups: Vec<Group>) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut start = 0;
    let count = groups.len();
    for (number, group) in groups.into_iter().enumerate() {
        let end = group.members.iter().copied().max().unwrap_or(start);
        let end = end.max(start);
        let relative = |positions: &[usize]| -> Vec<usize> {
            positions
                .iter()
                .filter(|&&at| at >= start && at <= end)
                .map(|&at| at - start)
                .collect()
        };
        let mut stored = Map::new();
        stored.insert("group".into(), json!(number));
        stored.insert("lines".into(), Value::Array(lines[start..=end].to_vec()));
        stored.insert("members".into(), json!(relative(&group.members)));
        stored.insert("chain".into(), json!(relative(&group.chain)));
        if number + 1 == count {
            stored.insert("after".into(), Value::Array(lines[end + 1..].to_vec()));
        }
        for (index, mut message) in group.messages.into_iter().enumerate() {
            let value = if index == 0 {
                Value::Object(stored.clone())
            } else {
                json!({ "group": number })
            };
            message.set_extra_field(key, Some(value));
            messages.push(message);
        }
        start = end + 1;
    }
    messages
}

/// Splits messages into runs by the group stored under `key`.
pub(super) fn runs(key: &str, messages: &[Message]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut current: Option<u64> = None;
    for message in messages {
        let stored = message.extra_fields().get(key).cloned();
        let group = stored
            .as_ref()
            .and_then(|s| s.get("group"))
            .and_then(Value::as_u64);
        let mut bare = message.clone();
        bare.set_extra_field(key, None);
        match (group, runs.last_mut()) {
            (Some(group), Some(run)) if current == Some(group) => run.messages.push(bare),
            _ => runs.push(Run {
                origin: stored.as_ref().and_then(origin_of),
                messages: vec![bare],
            }),
        }
        current = group;
    }
    runs
}

fn origin_of(stored: &Value) -> Option<Origin> {
    let positions = |key: &str| -> Vec<usize> {
        stored
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|n| n as usize)
                    .collect()
            })
            .unwrap_or_default()
    };
    let values = |key: &str| -> Vec<Value> {
        stored
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    stored.get("lines")?.as_array()?;
    Some(Origin {
        lines: values("lines"),
        members: positions("members"),
        chain: positions("chain"),
        after: values("after"),
    })
}

/// A member line near run `index` to copy session fields from (its own, else the next run's,
/// else the previous run's).
pub(super) fn nearest_member(runs: &[Run], index: usize) -> Option<&Value> {
    runs[index..]
        .iter()
        .find_map(first_member)
        .or_else(|| runs[..index].iter().rev().find_map(first_member))
}

fn first_member(run: &Run) -> Option<&Value> {
    let origin = run.origin.as_ref()?;
    origin.lines.get(*origin.members.first()?)
}

/// A UUID derived from `seed`: lines rebuilt from the same messages get the same ids, so the same
/// command writes the same file twice.
pub(super) fn derived_uuid(seed: &str) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_round_trip_through_their_messages() {
        let lines: Vec<Value> = (0..5).map(|n| json!({ "n": n })).collect();
        let groups = vec![
            Group {
                members: vec![1],
                chain: vec![0],
                messages: vec![Message::user("a"), Message::user("b")],
            },
            Group {
                members: vec![3],
                chain: vec![],
                messages: vec![Message::assistant("c")],
            },
        ];
        let messages = attach("k", &lines, groups);
        let runs = runs("k", &messages);
        assert_eq!(runs.len(), 2);
        let first = runs[0].origin.clone().unwrap();
        assert_eq!(first.lines, lines[0..2].to_vec());
        assert_eq!(
            (first.members.clone(), first.chain.clone()),
            (vec![1], vec![0])
        );
        assert_eq!(
            runs[0].messages,
            vec![Message::user("a"), Message::user("b")]
        );
        let second = runs[1].origin.clone().unwrap();
        assert_eq!(second.lines, lines[2..4].to_vec());
        assert_eq!(second.members, vec![1]);
        assert_eq!(second.after, vec![json!({ "n": 4 })]);
    }

    #[test]
    fn derived_ids_are_stable_uuids() {
        let id = derived_uuid("seed");
        assert_eq!(id, derived_uuid("seed"));
        assert_ne!(id, derived_uuid("other"));
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
    }
}
