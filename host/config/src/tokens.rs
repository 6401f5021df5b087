//! `tokens.*`: which encoding counts and which implementation counts it.

/// Which implementation counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// [`Backend::Bpe`] where it has the encoding, else `tiktoken-rs`.
    Auto,
    /// The fast counters: `o200k_base`'s built-in rank table, `bpe-openai` for `cl100k_base`.
    Bpe,
    /// `tiktoken-rs`, for every encoding.
    Tiktoken,
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Backend::Auto),
            "bpe" => Ok(Backend::Bpe),
            "tiktoken" => Ok(Backend::Tiktoken),
            other => Err(format!(
                "unknown backend `{other}`; use auto, bpe or tiktoken"
            )),
        }
    }
}

/// Encodings `bpe-openai` has.
pub const BPE_ENCODINGS: &[&str] = &["o200k_base", "cl100k_base"];
