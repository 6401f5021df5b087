//! The output budget of every round: a number of tokens, or a share of the round's input.

use serde::{Deserialize, Serialize};

/// How large each round's output may be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    /// This share of the round's input tokens, in percent (`20%`).
    Share(f64),
    /// This many tokens (`4000`).
    Tokens(u64),
}

impl Budget {
    /// The round's budget in tokens, for an input of `input_tokens`.
    pub fn tokens_for(self, input_tokens: u64) -> u64 {
        match self {
            Budget::Share(percent) => (input_tokens as f64 * percent / 100.0).floor() as u64,
            Budget::Tokens(tokens) => tokens,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::Share(20.0)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Budget::Share(percent) => write!(f, "{percent}% of each round's input"),
            Budget::Tokens(tokens) => write!(f, "{tokens} tokens"),
        }
    }
}

/// A budget that does not read as `N%` (0 < N ≤ 100) or a whole number of tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("budget '{0}' is neither a share like 20% (above 0, at most 100) nor a number of tokens")]
pub struct BadBudget(pub String);

impl std::str::FromStr for Budget {
    type Err = BadBudget;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadBudget(text.to_string());
        let text = text.trim();
        if let Some(percent) = text.strip_suffix('%') {
            let percent: f64 = percent.trim().parse().map_err(|_| bad())?;
            if !(percent > 0.0 && percent <= 100.0) {
                return Err(bad());
            }
            return Ok(Budget::Share(percent));
        }
        match text.parse::<u64>() {
            Ok(tokens) if tokens > 0 => Ok(Budget::Tokens(tokens)),
            _ => Err(bad()),
        }
    }
}
