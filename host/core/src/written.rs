//! A session's record of what its engines wrote, for hosts that keep no session records of
//! their own (`ctxhost compress`, run once per round on the previous output; the Python
//! package, which a resumed agent starts again): a session opened with
//! [`SessionOptions::recording_written`](crate::SessionOptions::recording_written) reads it
//! before each compression, tells the engine which messages of its input are its own output
//! ([`Session::recognize_written`](crate::Session::recognize_written)), so a summary is folded
//! into the next one instead of read as a turn, and keeps it after. The gateway knows the same
//! from its session records.
//!
//! Only digests of each message's role and text are kept: the record holds nothing of the
//! conversation, and a message edited since it was written is no longer the engine's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ctxhost_sdk::Message;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// At most this many messages are remembered per session (an engine's output holds a few).
const KEPT: usize = 64;

/// What a session's engines wrote that is still in its context, as the last run left it.
#[derive(Debug)]
pub struct WrittenRecord {
    path: PathBuf,
    written: Vec<Written>,
}

/// One message an engine wrote: its digest, and its size, so that only messages of a size
/// recorded are hashed (a run's input is mostly the conversation as it came).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Written {
    digest: String,
    bytes: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    session: String,
    written: Vec<Written>,
}

/// Why the record could not be read or kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WrittenRecordError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{path} is not a record of what the engines wrote ({reason}): delete it to start the session's record over")]
    Unreadable { path: PathBuf, reason: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

impl WrittenRecord {
    /// Session `session`'s record in ctxhost's `home` (`written/`; empty when there is none
    /// yet).
    pub fn open(home: &Path, session: &str) -> Result<Self, WrittenRecordError> {
        let name = format!("{:x}", Sha256::digest(session.as_bytes()));
        let path = home.join("written").join(format!("{}.json", &name[..32]));
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(WrittenRecord {
                    path,
                    written: Vec::new(),
                })
            }
            Err(error) => {
                return Err(WrittenRecordError::Read {
                    path,
                    reason: error.to_string(),
                })
            }
        };
        let stored: Stored =
            serde_json::from_str(&text).map_err(|error| WrittenRecordError::Unreadable {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        // Two session ids whose digests share a file name: not this session's record.
        let written = if stored.session == session {
            stored.written
        } else {
            Vec::new()
        };
        Ok(WrittenRecord { path, written })
    }

    /// The messages of `messages` an earlier run's engine wrote.
    pub fn among<'a>(&self, messages: &'a [Message]) -> Vec<&'a Message> {
        messages
            .iter()
            .filter(|message| self.holds(message, bytes(message)))
            .collect()
    }

    /// Whether the record holds `message`, of `size` bytes.
    fn holds(&self, message: &Message, size: usize) -> bool {
        self.written.iter().any(|w| w.bytes == size) && {
            let digest = digest(message);
            self.written.iter().any(|w| w.digest == digest)
        }
    }

    /// After a compression of `input` into `output`: what the engine wrote before and is still
    /// in the output, and what the output holds that the input did not.
    pub fn update(&mut self, input: &[Message], output: &[Message]) {
        let mut given: HashMap<usize, Vec<&Message>> = HashMap::new();
        for message in input {
            given.entry(bytes(message)).or_default().push(message);
        }
        let mut written: Vec<Written> = Vec::new();
        for message in output {
            let size = bytes(message);
            let new = !given
                .get(&size)
                .is_some_and(|same_size| same_size.contains(&message));
            if new || self.holds(message, size) {
                let entry = Written {
                    digest: digest(message),
                    bytes: size,
                };
                if !written.contains(&entry) {
                    written.push(entry);
                }
            }
        }
        let over = written.len().saturating_sub(KEPT);
        written.drain(..over);
        self.written = written;
    }

    /// Writes the record for `session` (whole, or not at all).
    pub fn save(&self, session: &str) -> Result<(), WrittenRecordError> {
        let write = |error: std::io::Error| WrittenRecordError::Write {
            path: self.path.clone(),
            reason: error.to_string(),
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(write)?;
        let stored = Stored {
            session: session.to_string(),
            written: self.written.clone(),
        };
        let text = serde_json::to_string(&stored).unwrap_or_default();
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(write)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(write)?;
        file.persist(&self.path).map_err(|e| write(e.error))?;
        Ok(())
    }
}

/// The size of what [`digest`] reads of a message (cheap: nothing is copied).
fn bytes(message: &Message) -> usize {
    let text = match message.text() {
        Some(text) => text.len(),
        None => message.content_text().len(),
    };
    text + message
        .tool_calls()
        .iter()
        .map(|call| call.arguments().len())
        .sum::<usize>()
}

/// A message as the record knows it: its role, its text and its tool calls (what survives
/// a round through any transcript format).
fn digest(message: &Message) -> String {
    let mut hasher = Sha256::new();
    let mut field = |text: &str| {
        hasher.update(text.as_bytes());
        hasher.update([0]);
    };
    field(message.role());
    field(&message.content_text());
    field(message.tool_call_id().unwrap_or(""));
    for call in message.tool_calls() {
        field(call.id());
        field(call.name());
        field(call.arguments());
    }
    format!("{:x}", hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: usize) -> Message {
        Message::user(format!("turn {n}"))
    }

    #[test]
    fn a_run_records_what_its_output_adds_and_what_it_wrote_before_while_it_stays() {
        let home = tempfile::tempdir().unwrap();
        let mut record = WrittenRecord::open(home.path(), "s").unwrap();
        let summary = Message::assistant("[summary of turns 1-3]");
        let input = vec![turn(0), turn(1), turn(2), turn(3), turn(4)];
        let output = vec![turn(0), summary.clone(), turn(4)];
        record.update(&input, &output);
        record.save("s").unwrap();

        // The next run's input is that output and more: the summary is the engine's.
        let record = WrittenRecord::open(home.path(), "s").unwrap();
        let next = [output.clone(), vec![turn(5)]].concat();
        assert_eq!(record.among(&next), vec![&summary]);
        // A message the client sent with the same text is not the engine's.
        assert!(record
            .among(&[Message::user("[summary of turns 1-3]")])
            .is_empty());

        // Once a later output no longer holds it, it is forgotten.
        let mut record = record;
        let newer = Message::assistant("[summary of turns 1-5]");
        record.update(&next, &[turn(0), newer.clone(), turn(5)]);
        assert!(record.among(&next).is_empty());
        assert_eq!(record.among(std::slice::from_ref(&newer)), vec![&newer]);
        // Another session has no record of it.
        assert!(WrittenRecord::open(home.path(), "t")
            .unwrap()
            .among(&next)
            .is_empty());
    }

    #[test]
    fn an_unreadable_record_names_its_file_and_the_fix() {
        let home = tempfile::tempdir().unwrap();
        let record = WrittenRecord::open(home.path(), "s").unwrap();
        record.save("s").unwrap();
        std::fs::write(&record.path, "not json").unwrap();
        let error = WrittenRecord::open(home.path(), "s")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&record.path.display().to_string()),
            "{error}"
        );
        assert!(error.contains("delete it"), "{error}");
    }
}
