//! Tokens into dollars.

use serde::Serialize;

use crate::cache::{CallTokens, Ttl};
use crate::price::Price;

/// Dollars by what they paid for.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Dollars {
    pub input: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    pub output: f64,
}

impl Dollars {
    pub fn total(&self) -> f64 {
        self.input + self.cache_write + self.cache_read + self.output
    }

    /// What `tokens` cost at `price`, cache writes at `ttl`'s price.
    pub fn of(tokens: &CallTokens, price: &Price, ttl: Ttl) -> Dollars {
        let per_token = |count: u64, per_million: f64| count as f64 * per_million / 1_000_000.0;
        let write_price = match ttl {
            Ttl::FiveMinutes => price.cache_write_5m,
            Ttl::OneHour => price.cache_write_1h,
        };
        Dollars {
            input: per_token(tokens.uncached, price.input),
            cache_write: per_token(tokens.cache_write, write_price),
            cache_read: per_token(tokens.cache_read, price.cache_read),
            output: per_token(tokens.output, price.output),
        }
    }
}

impl std::ops::AddAssign for Dollars {
    fn add_assign(&mut self, other: Dollars) {
        self.input += other.input;
        self.cache_write += other.cache_write;
        self.cache_read += other.cache_read;
        self.output += other.output;
    }
}

/// `12.3456` → `$12.35`; amounts under a dollar keep four decimals (`$0.0123`), so a short
/// session's cost does not round to nothing.
pub fn format_dollars(amount: f64) -> String {
    let sign = if amount < 0.0 { "-" } else { "" };
    let amount = amount.abs();
    if amount >= 1.0 {
        format!("{sign}${amount:.2}")
    } else {
        format!("{sign}${amount:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_priced_per_million_with_the_ttls_write_price() {
        let sonnet = Price::anthropic(3.0, 15.0);
        let tokens = CallTokens {
            uncached: 1_000_000,
            cache_write: 2_000_000,
            cache_read: 10_000_000,
            output: 100_000,
        };
        let five = Dollars::of(&tokens, &sonnet, Ttl::FiveMinutes);
        assert!((five.input - 3.0).abs() < 1e-9);
        assert!((five.cache_write - 7.5).abs() < 1e-9);
        assert!((five.cache_read - 3.0).abs() < 1e-9);
        assert!((five.output - 1.5).abs() < 1e-9);
        assert!((five.total() - 15.0).abs() < 1e-9);
        let hour = Dollars::of(&tokens, &sonnet, Ttl::OneHour);
        assert!((hour.cache_write - 12.0).abs() < 1e-9);
    }

    #[test]
    fn dollars_read_well_large_and_small() {
        assert_eq!(format_dollars(12.3456), "$12.35");
        assert_eq!(format_dollars(0.012345), "$0.0123");
        assert_eq!(format_dollars(-0.5), "-$0.5000");
    }
}
