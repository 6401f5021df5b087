//! A host's record of what its engines wrote in a session, for hosts that keep no session
//! record of their own (`ctxhost compress`, run once per round on the previous output): the
//! next run tells the engine which messages of its input are its own output
//! ([`Session::recognize_written`](crate::Session::recognize_written)), so a summary is folded
//! into the next one instead of read as a turn. The gateway knows the same from its session
//! records.
//!
//! Only digests of each message's role and text are kept: the record holds nothing of the
//! conversation, and a message edited since it was written is no longer the engine's.

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
    digests: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    session: String,
    written: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum WrittenRecordError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a record of what the engines wrote ({reason}): delete it to start the session's record over")]
    Unreadable { path: PathBuf, reason: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
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
                    digests: Vec::new(),
                })
            }
            Err(source) => return Err(WrittenRecordError::Read { path, source }),
        };
        let stored: Stored =
            serde_json::from_str(&text).map_err(|error| WrittenRecordError::Unreadable {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        // Two session ids whose digests share a file name: not this session's record.
        let digests = if stored.session == session {
            stored.written
        } else {
            Vec::new()
        };
        Ok(WrittenRecord { path, digests })
    }

    /// The messages of `messages` an earlier run's engine wrote.
    pub fn among<'a>(&self, messages: &'a [Message]) -> Vec<&'a Message> {
        messages
            .iter()
            .filter(|message| self.digests.contains(&digest(message)))
            .collect()
    }

    /// After a compression of `input` into `output`: what the engine wrote before and is still
    /// in the output, and what the output holds that the input did not.
    pub fn update(&mut self, input: &[Message], output: &[Message]) {
        let given: Vec<String> = input.iter().map(digest).collect();
        let mut digests = Vec::new();
        for message in output {
            let digest = digest(message);
            let written = self.digests.contains(&digest) || !given.contains(&digest);
            if written && !digests.contains(&digest) {
                digests.push(digest);
            }
        }
        let over = digests.len().saturating_sub(KEPT);
        digests.drain(..over);
        self.digests = digests;
    }

    /// Writes the record for `session` (whole, or not at all).
    pub fn save(&self, session: &str) -> Result<(), WrittenRecordError> {
        let write = |source| WrittenRecordError::Write {
            path: self.path.clone(),
            source,
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(write)?;
        let stored = Stored {
            session: session.to_string(),
            written: self.digests.clone(),
        };
        let text = serde_json::to_string(&stored).unwrap_or_default();
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(write)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(write)?;
        file.persist(&self.path).map_err(|e| write(e.error))?;
        Ok(())
    }
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
