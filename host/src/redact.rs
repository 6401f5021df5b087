//! Secrets never leave for a summarizer and never appear in a summary: API keys, tokens,
//! passwords in URLs, private keys and `password = ...` style assignments are replaced by the
//! host's `summarize` service before any text is sent, and again in whatever comes back, for
//! every engine.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Regex, RegexSet};

pub const REDACTED: &str = "[REDACTED]";

struct Rule {
    pattern: &'static str,
    /// Replacement, with `$name` groups kept around the secret.
    replacement: &'static str,
    /// `pattern` compiled, the first time the text holds a match (most texts hold none, and
    /// compiling every rule cost a one-shot command more than scanning its session).
    compiled: OnceLock<Regex>,
}

impl Rule {
    fn regex(&self) -> &Regex {
        self.compiled
            .get_or_init(|| Regex::new(self.pattern).expect("redaction patterns are valid"))
    }
}

fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let rule = |pattern: &'static str, replacement: &'static str| Rule {
            pattern,
            replacement,
            compiled: OnceLock::new(),
        };
        vec![
            rule(
                r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
                "[REDACTED PRIVATE KEY]",
            ),
            // Credentials in URLs: scheme://user:password@host, whatever the password holds
            // (`/` included) short of whitespace or `@`.
            rule(
                r"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)[^\s@]+@",
                "${pre}[REDACTED]@",
            ),
            rule(r"(?i)(?P<pre>(?-u:\b)bearer\s+)[A-Za-z0-9._~+/=-]{12,}", "${pre}[REDACTED]"),
            // Provider key shapes: OpenAI / Anthropic (sk-...), GitHub, AWS, Slack, Google,
            // Stripe, Hugging Face, JWTs.
            rule(r"(?-u:\b)sk-[A-Za-z0-9_-]{16,}", REDACTED),
            rule(r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", REDACTED),
            rule(r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)", REDACTED),
            rule(r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}", REDACTED),
            rule(r"(?-u:\b)xapp-[0-9]-[A-Za-z0-9-]{10,}", REDACTED),
            rule(
                r"(?P<pre>hooks\.slack\.com/(?:services|workflows)/)[A-Za-z0-9/_-]{8,}",
                "${pre}[REDACTED]",
            ),
            // npm and PyPI publishing tokens.
            rule(r"(?-u:\b)npm_[A-Za-z0-9]{30,}", REDACTED),
            rule(r"(?-u:\b)pypi-[A-Za-z0-9_-]{40,}", REDACTED),
            rule(r"(?-u:\b)AIza[0-9A-Za-z_-]{30,}", REDACTED),
            rule(r"(?-u:\b)(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", REDACTED),
            rule(r"(?-u:\b)whsec_[A-Za-z0-9]{24,}", REDACTED),
            rule(r"(?-u:\b)hf_[A-Za-z0-9]{20,}", REDACTED),
            rule(r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", REDACTED),
            // Assignments: api_key = "...", password: ..., AWS_SECRET_ACCESS_KEY=...
            rule(
                r#"(?i)(?P<pre>(?-u:\b)[A-Za-z0-9_]*(?:api[_-]?key|secret|password|passwd|pwd|token|access[_-]?key)[A-Za-z0-9_]*["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#,
                "${pre}[REDACTED]",
            ),
        ]
    })
}

/// All patterns at once: one pass over the text finds which rules apply at all (usually none).
fn rule_set() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| {
        RegexSet::new(rules().iter().map(|r| r.pattern)).expect("redaction patterns are valid")
    })
}

/// Compiles what every [`redact`] call needs, so that a command can do it while it waits for
/// something else (a one-shot `ctxhost compress` while the tokenizer loads).
pub fn warm() {
    rule_set();
}

/// `text` with every secret replaced.
pub fn redact(text: &str) -> Cow<'_, str> {
    let hits = rule_set().matches(text);
    if !hits.matched_any() {
        return Cow::Borrowed(text);
    }
    let mut current = Cow::Borrowed(text);
    for (index, rule) in rules().iter().enumerate() {
        // A replacement can only remove matches, so rules that did not match still do not.
        if hits.matched(index) && rule.regex().is_match(&current) {
            current = Cow::Owned(
                rule.regex()
                    .replace_all(&current, rule.replacement)
                    .into_owned(),
            );
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_the_usual_secrets() {
        let cases = [
            (
                "key sk-proj-AbCdEf0123456789AbCdEf here",
                "key [REDACTED] here",
            ),
            ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", "[REDACTED]"),
            (
                "token ghp_0123456789abcdefghij0123456789abcd",
                "token [REDACTED]",
            ),
            ("AKIAABCDEFGHIJKLMNOP", "[REDACTED]"),
            (
                "Authorization: Bearer abc.def-ghi_jkl123",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "git clone https://ada:hunter22@example.com/r.git",
                "git clone https://ada:[REDACTED]@example.com/r.git",
            ),
            (
                "export OPENAI_API_KEY=\"abcdef123456\"",
                "export OPENAI_API_KEY=\"[REDACTED]\"",
            ),
            ("password: correct-horse", "password: [REDACTED]"),
            ("xoxb-1234567890-abcdefghij", "[REDACTED]"),
            (
                "npm token npm_abcdefghijklmnopqrstuvwxyz0123456789",
                "npm token [REDACTED]",
            ),
            (
                "TWINE_PASSWORD pypi-AgEIcHlwaS5vcmcCJGQ0ZjRkY2E4LTk2NGQtNGU3Ni1hMjVmLTk2YjE5NWE1",
                "TWINE_PASSWORD [REDACTED]",
            ),
            (
                "postgres://app:p/a:ss@db.internal:5432/prod",
                "postgres://app:[REDACTED]@db.internal:5432/prod",
            ),
            (
                "hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX",
                "hooks.slack.com/services/[REDACTED]",
            ),
            ("whsec_abcdefghijklmnopqrstuvwxyz012345", "[REDACTED]"),
            ("sk_live_abcdefghijklmnop1234", "[REDACTED]"),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt [REDACTED]",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(input), expected, "{input}");
        }
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(redact(pem), "a\n[REDACTED PRIVATE KEY]\nb");
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for text in [
            "ls -la src/",
            "the token count is 512",
            "def password_hash(x):",
            "https://example.com/a",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
