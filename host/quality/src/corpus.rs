//! The corpus: real agent transcripts (SWE-agent's public demonstration trajectories) as
//! OpenAI chat-format JSON, one conversation per `*.json` file.
//!
//! The repository ships one in [`SHIPPED`] (see its `README.md` for source and license). It is
//! found at run time, never at a path fixed when this crate was built ([`Corpus::locate`]):
//!
//! 1. a directory the caller names (`ctxhost quality --corpus DIR`), then
//! 2. the directory `$CTXHOST_CORPUS` names ([`CORPUS_ENV`]), then
//! 3. [`SHIPPED`] in a starting directory or the nearest of its parents that holds it (the
//!    binary starts from the current directory, so it finds the corpus anywhere inside a
//!    checkout).
//!
//! Nothing found is [`CorpusError::NotFound`], which names what to set.

use std::path::{Path, PathBuf};

use ctxhost_sdk::Message;

/// The environment variable that names the corpus directory.
pub const CORPUS_ENV: &str = "CTXHOST_CORPUS";

/// Where a ctxhost checkout holds the corpus it ships, relative to its root.
pub const SHIPPED: &str = "host/quality/corpus/swe-agent";

/// A corpus that cannot be found or read.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// No directory was named and no checkout's corpus is in `from` or above it.
    #[error(
        "no corpus found: {CORPUS_ENV} is not set and no {SHIPPED} is in {} or above it",
        from.display()
    )]
    NotFound {
        /// Where the search for a checkout started.
        from: PathBuf,
    },
    /// The directory cannot be listed.
    #[error("the corpus at {} cannot be read: {error}", dir.display())]
    Unreadable {
        /// The corpus directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The directory holds no transcript.
    #[error("the corpus at {} holds no *.json transcript", dir.display())]
    Empty {
        /// The corpus directory.
        dir: PathBuf,
    },
    /// A transcript cannot be read.
    #[error("cannot read the corpus transcript {}: {error}", path.display())]
    UnreadableTranscript {
        /// The transcript's file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A transcript is not chat messages.
    #[error("{}: not a JSON array of chat messages: {error}", path.display())]
    NotMessages {
        /// The transcript's file.
        path: PathBuf,
        /// What the parser said.
        error: serde_json::Error,
    },
    /// No transcript has the name asked for.
    #[error("no transcript named {name} in the corpus at {}; it has: {}", dir.display(), names.join(", "))]
    NoSuchTranscript {
        /// The name asked for.
        name: String,
        /// The corpus directory.
        dir: PathBuf,
        /// The names it has.
        names: Vec<String>,
    },
}

/// One transcript of the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// Its file name, e.g. `ctf__pwn__warmup.json`.
    pub name: String,
    /// Its messages, in order.
    pub messages: Vec<Message>,
}

/// A corpus directory (not read yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corpus {
    dir: PathBuf,
}

impl Corpus {
    /// The corpus in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> Corpus {
        Corpus { dir: dir.into() }
    }

    /// The corpus by the rule of this module: `named` when given, else `$CTXHOST_CORPUS` when
    /// set (a relative path is taken from the current directory), else [`SHIPPED`] in `from`
    /// or the nearest of its parents that holds it.
    pub fn locate(named: Option<&Path>, from: &Path) -> Result<Corpus, CorpusError> {
        if let Some(dir) = named {
            return Ok(Corpus::at(dir));
        }
        if let Some(dir) = std::env::var_os(CORPUS_ENV).filter(|dir| !dir.is_empty()) {
            return Ok(Corpus::at(dir));
        }
        from.ancestors()
            .map(|root| root.join(SHIPPED))
            .find(|dir| dir.is_dir())
            .map(Corpus::at)
            .ok_or_else(|| CorpusError::NotFound {
                from: from.to_path_buf(),
            })
    }

    /// The corpus directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every transcript, sorted by file name. A directory with no `*.json` file is an error.
    pub fn transcripts(&self) -> Result<Vec<Transcript>, CorpusError> {
        let entries = std::fs::read_dir(&self.dir).map_err(|error| CorpusError::Unreadable {
            dir: self.dir.clone(),
            error,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|e| e == "json"))
            .collect();
        if paths.is_empty() {
            return Err(CorpusError::Empty {
                dir: self.dir.clone(),
            });
        }
        paths.sort();
        paths.iter().map(|path| read(path)).collect()
    }

    /// The messages of the transcript named `name` (a file name, with or without `.json`).
    pub fn transcript(&self, name: &str) -> Result<Vec<Message>, CorpusError> {
        let all = self.transcripts()?;
        let wanted = name.strip_suffix(".json").unwrap_or(name);
        match all
            .iter()
            .position(|t| t.name.strip_suffix(".json") == Some(wanted))
        {
            Some(found) => Ok(all.into_iter().nth(found).expect("found").messages),
            None => Err(CorpusError::NoSuchTranscript {
                name: name.to_string(),
                dir: self.dir.clone(),
                names: all.into_iter().map(|t| t.name).collect(),
            }),
        }
    }

    /// One long session of every transcript ([`concatenate`]): long enough to make any engine
    /// compact many times.
    pub fn long_session(&self) -> Result<Vec<Message>, CorpusError> {
        Ok(concatenate(&self.transcripts()?))
    }
}

/// One long session: the first transcript's system prompt, then every transcript's other
/// messages, one transcript after another.
pub fn concatenate(transcripts: &[Transcript]) -> Vec<Message> {
    let mut session: Vec<Message> = transcripts
        .first()
        .map(|t| {
            t.messages
                .iter()
                .take_while(|m| m.is_system())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    for transcript in transcripts {
        session.extend(
            transcript
                .messages
                .iter()
                .filter(|m| !m.is_system())
                .cloned(),
        );
    }
    session
}

fn read(path: &Path) -> Result<Transcript, CorpusError> {
    let text =
        std::fs::read_to_string(path).map_err(|error| CorpusError::UnreadableTranscript {
            path: path.to_path_buf(),
            error,
        })?;
    let messages: Vec<Message> =
        serde_json::from_str(&text).map_err(|error| CorpusError::NotMessages {
            path: path.to_path_buf(),
            error,
        })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Transcript { name, messages })
}
