//! Writing messages back out: as OpenAI messages, or in the format a transcript was read from.

use std::str::FromStr;

use ctxhost_sdk::Message;

use super::{anthropic, claude_code, codex, hermes, openai, Format, Written};

/// What `--output-format` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The format the input was read from.
    Same,
    /// A named format (`openai` is the default).
    Named(Format),
}

impl Default for OutputFormat {
    fn default() -> Self {
        OutputFormat::Named(Format::OpenAi)
    }
}

impl OutputFormat {
    /// The format to write for an input read as `input`.
    pub fn resolve(self, input: Format) -> Format {
        match self {
            OutputFormat::Same => input,
            OutputFormat::Named(format) => format,
        }
    }
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "same" => Ok(OutputFormat::Same),
            other => other
                .parse::<Format>()
                .map(OutputFormat::Named)
                .map_err(|error| format!("{error} or same")),
        }
    }
}

/// Writes `messages` in `format`. Claude Code and Codex write the lines a message was read from
/// back when the message is unchanged, and new lines for the rest.
pub fn write(messages: &[Message], format: Format) -> Written {
    let text = match format {
        Format::OpenAi => openai::write(messages),
        Format::Hermes => hermes::write(messages),
        Format::Anthropic => anthropic::write(messages),
        Format::ClaudeCode => return claude_code::write(messages),
        Format::Codex => return codex::write(messages),
    };
    Written {
        text,
        notes: Vec::new(),
    }
}
