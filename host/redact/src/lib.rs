//! Secrets never leave for a summarizer and never appear in a summary: API keys, tokens,
//! passwords in URLs, private keys and `password = ...` style assignments are replaced by the
//! host's `summarize` service before any text is sent, and again in whatever comes back, for
//! every engine.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use memchr::memmem::Finder;
use regex::Regex;

pub const REDACTED: &str = "[REDACTED]";

struct Rule {
    pattern: &'static str,
    /// Replacement, with `$name` groups kept around the secret.
    replacement: &'static str,
    /// Literals every match holds one of, so a text holding none of them needs no regex
    /// search at all; empty for a rule that is always searched.
    literals: &'static [&'static str],
    /// Whether the literals match in any ASCII case (the rule ignores case).
    any_case: bool,
    /// `pattern` compiled, the first time the text may hold a match (most texts hold none,
    /// and compiling every rule cost a one-shot command more than scanning its session).
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
        let rule = |pattern: &'static str,
                    replacement: &'static str,
                    literals: &'static [&'static str]| Rule {
            pattern,
            replacement,
            literals,
            any_case: pattern.starts_with("(?i)"),
            compiled: OnceLock::new(),
        };
        vec![
            // PEM and PGP (`... PRIVATE KEY BLOCK-----`) private keys; one cut short (no END
            // line: a truncated tool output) is hidden to the end of the text.
            rule(
                r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
                "[REDACTED PRIVATE KEY]",
                &["-----BEGIN "],
            ),
            // Credentials in URLs: scheme://user:password@host. The password runs to the
            // last `@` before whitespace or a quote, so one holding `@` or `/` is hidden whole
            // (an `@` later in the URL hides more than it must: never a secret).
            rule(
                r#"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@"'<>]*:)[^\s"'<>]*@"#,
                "${pre}[REDACTED]@",
                &["://"],
            ),
            // HTTP credentials other than bearer tokens: `Authorization: Basic dXNlcjpwYXNz`.
            rule(
                r#"(?i)(?P<pre>(?-u:\b)authorization["']?\s*[:=]\s*["']?(?:basic|digest|token|negotiate|ntlm)\s+)[^\s"',;]{4,}"#,
                "${pre}[REDACTED]",
                &["authorization"],
            ),
            // Azure storage and service bus connection strings.
            rule(
                // ASCII case only (`(?-u:...)`): the Kelvin sign must not spell `Key` past the literal search.
                r"(?i)(?P<pre>(?-u:\b)(?-u:AccountKey|SharedAccessKey|SharedAccessSignature)=)[^;\s]+",
                "${pre}[REDACTED]",
                &["accountkey", "sharedaccess"],
            ),
            // No `k` or `s` in `bearer`: its case-insensitive match is ASCII's.
            rule(
                r"(?i)(?P<pre>(?-u:\b)bearer\s+)[A-Za-z0-9._~+/=-]{12,}",
                "${pre}[REDACTED]",
                &["bearer"],
            ),
            // Provider key shapes: OpenAI / Anthropic (sk-...), GitHub, AWS, Slack, Google,
            // Stripe, Hugging Face, JWTs.
            rule(r"(?-u:\b)sk-[A-Za-z0-9_-]{16,}", REDACTED, &["sk-"]),
            rule(
                r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
                REDACTED,
                &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
            ),
            // GitLab personal, deploy, runner and other tokens.
            rule(
                r"(?-u:\b)gl(?:pat|dt|rt|ptt|cbt|soat|ffct|imt|oas)-[A-Za-z0-9_.-]{20,}",
                REDACTED,
                &["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glsoat-", "glffct-", "glimt-", "gloas-"],
            ),
            // SendGrid: SG.<id>.<secret>
            rule(
                r"(?-u:\b)SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
                REDACTED,
                &["SG."],
            ),
            rule(
                r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
                REDACTED,
                &["AKIA", "ASIA"],
            ),
            rule(r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}", REDACTED, &["xox"]),
            rule(r"(?-u:\b)xapp-[0-9]-[A-Za-z0-9-]{10,}", REDACTED, &["xapp-"]),
            rule(
                r"(?P<pre>hooks\.slack\.com/(?:services|workflows)/)[A-Za-z0-9/_-]{8,}",
                "${pre}[REDACTED]",
                &["hooks.slack.com/"],
            ),
            // npm and PyPI publishing tokens.
            rule(r"(?-u:\b)npm_[A-Za-z0-9]{30,}", REDACTED, &["npm_"]),
            rule(r"(?-u:\b)pypi-[A-Za-z0-9_-]{40,}", REDACTED, &["pypi-"]),
            rule(r"(?-u:\b)AIza[0-9A-Za-z_-]{30,}", REDACTED, &["AIza"]),
            rule(
                r"(?-u:\b)(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
                REDACTED,
                &["_live_", "_test_"],
            ),
            rule(r"(?-u:\b)whsec_[A-Za-z0-9]{24,}", REDACTED, &["whsec_"]),
            rule(r"(?-u:\b)hf_[A-Za-z0-9]{20,}", REDACTED, &["hf_"]),
            rule(
                r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
                REDACTED,
                &["eyJ"],
            ),
            // Twilio API keys: `SK` and 32 hex digits, exactly (a word like `SKIP` is not one).
            rule(r"(?-u:\b)SK[0-9a-fA-F]{32}(?-u:\b)", REDACTED, &["SK"]),
            // Azure shared access signature URLs: the `sig=` query parameter is the secret.
            rule(
                r#"(?P<pre>[?&]sig=)[^&\s"'<>#]+"#,
                "${pre}[REDACTED]",
                &["sig="],
            ),
            // `.netrc` entries: `machine HOST [login NAME] [account NAME] password SECRET`, on one
            // line or several (a `default` entry must name its login: "by default password
            // auth" is prose). Its words in ASCII case only, for the literal search.
            rule(
                r"(?i)(?P<pre>(?-u:\b)(?:(?-u:machine)\s+\S+(?:\s+(?-u:login|account|port)\s+\S+)*|(?-u:default)(?:\s+(?-u:login|account|port)\s+\S+)+)\s+(?-u:password)\s+)\S+",
                "${pre}[REDACTED]",
                &["machine", "default"],
            ),
            // Assignments: api_key = "...", password: ..., AWS_SECRET_ACCESS_KEY=...
            // Always searched: Unicode case folding lets `ſ` and `K` (the Kelvin sign) spell its
            // words, which an ASCII literal search would miss.
            rule(
                r#"(?i)(?P<pre>(?-u:\b)[A-Za-z0-9_]*(?:api[_-]?key|secret|password|passwd|pwd|token|access[_-]?key)[A-Za-z0-9_]*["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#,
                "${pre}[REDACTED]",
                &[],
            ),
            // Passwords in prose: "my password is hunter22", "the passphrase for the vault was:
            // ...". Its words in ASCII case only (`(?-u:...)`), so the literal search for
            // `pass` finds every text it may match and the rest cost no regex search.
            rule(
                r#"(?i)(?P<pre>(?-u:\b)(?-u:password|passwd|passphrase|passcode)(?:\s+(?:for|of|to|on)\s+(?:the\s+)?\S+)?\s+(?:is|was|will\s+be)\s*:?\s*["'`“]?)[^\s"'`”]{3,}"#,
                "${pre}[REDACTED]",
                &["pass"],
            ),
        ]
    })
}

/// Searchers for the rules' literals, by rule (empty for the rules always searched).
fn finders() -> &'static [Vec<Finder<'static>>] {
    static FINDERS: OnceLock<Vec<Vec<Finder<'static>>>> = OnceLock::new();
    FINDERS.get_or_init(|| {
        rules()
            .iter()
            .map(|rule| {
                let literals = rule.literals.iter();
                match rule.any_case {
                    true => Vec::new(),
                    false => literals
                        .map(|literal| Finder::new(literal.as_bytes()))
                        .collect(),
                }
            })
            .collect()
    })
}

/// One automaton for the literals of the rules matched in any ASCII case, and the rule each
/// literal belongs to: a single pass over a text finds them all (a scan per literal for its
/// first letter in either case costs a pass per literal, and those letters are common).
fn any_case_literals() -> &'static (AhoCorasick, Vec<usize>) {
    static ANY_CASE: OnceLock<(AhoCorasick, Vec<usize>)> = OnceLock::new();
    ANY_CASE.get_or_init(|| {
        let (literals, owners): (Vec<&str>, Vec<usize>) = rules()
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.any_case)
            .flat_map(|(index, rule)| rule.literals.iter().map(move |literal| (*literal, index)))
            .unzip();
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(literals)
            .expect("the rules' literals are plain ASCII words");
        (automaton, owners)
    })
}

/// Which any-case rules' literals `text` holds, by rule.
fn any_case_rules_in(text: &str) -> Vec<bool> {
    let (automaton, owners) = any_case_literals();
    let mut found = vec![false; rules().len()];
    let mut left = owners
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    for hit in automaton.find_overlapping_iter(text) {
        let owner = owners[hit.pattern().as_usize()];
        if !found[owner] {
            found[owner] = true;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    found
}

/// Compiles what every [`redact`] call needs, so that a command can do it while it waits for
/// something else (a one-shot `ctxhost compress` while the tokenizer loads).
pub fn warm() {
    finders();
    any_case_literals();
    for rule in rules().iter().filter(|r| r.literals.is_empty()) {
        rule.regex();
    }
}

/// Text from which the rules' literals are looked for on two threads, each taking half the
/// rules (a long session's middle, summarized in one piece, is a megabyte or more).
const PARALLEL_MIN_BYTES: usize = 256 * 1024;

/// Which rules may match `text` (they hold one of the rule's literals, or have none), by rule.
fn rules_that_may_match(text: &str) -> Vec<bool> {
    rules_that_may_match_on(text, text.len() >= PARALLEL_MIN_BYTES)
}

fn rules_that_may_match_on(text: &str, two_threads: bool) -> Vec<bool> {
    let exact = |rule: &Rule, finders: &[Finder<'_>]| {
        rule.literals.is_empty() || finders.iter().any(|f| f.find(text.as_bytes()).is_some())
    };
    let rules: Vec<(usize, &Rule, &Vec<Finder<'_>>)> = rules()
        .iter()
        .zip(finders())
        .enumerate()
        .filter(|(_, (rule, _))| !rule.any_case || rule.literals.is_empty())
        .map(|(index, (rule, finders))| (index, rule, finders))
        .collect();
    let check = |rules: &[(usize, &Rule, &Vec<Finder<'_>>)]| -> Vec<(usize, bool)> {
        rules
            .iter()
            .map(|(index, rule, finders)| (*index, exact(rule, finders)))
            .collect()
    };
    let (mut may, exact_hits) = if two_threads {
        // The any-case pass on one thread, the exact literals on the other.
        std::thread::scope(|scope| {
            let any_case = scope.spawn(|| any_case_rules_in(text));
            let exact_hits = check(&rules);
            match any_case.join() {
                Ok(any_case) => (any_case, exact_hits),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    } else {
        (any_case_rules_in(text), check(&rules))
    };
    for (index, hit) in exact_hits {
        may[index] = hit;
    }
    may
}

/// `text` with every secret replaced.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut current = Cow::Borrowed(text);
    for (rule, may) in rules().iter().zip(rules_that_may_match(text)) {
        if !may {
            continue;
        }
        // Rules apply in order, each to what the earlier ones left, if it matched the text as
        // given (a replacement can only remove matches).
        let matched = rule.regex().is_match(text)
            && (matches!(current, Cow::Borrowed(_)) || rule.regex().is_match(&current));
        if matched {
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
    use super::{redact, rules, rules_that_may_match_on, PARALLEL_MIN_BYTES};

    #[test]
    fn a_long_text_selects_the_same_rules_on_two_threads() {
        // Each text, and the part of it that is the secret.
        let secrets = [
            ("sk-proj-AbCdEf0123456789AbCdEf", "0123456789AbCdEf"),
            ("ghp_0123456789abcdefghij0123456789abcd", "abcdefghij0123"),
            ("Bearer abc.def-ghi_jkl123", "ghi_jkl123"),
            ("https://ada:hunter22@example.com/r.git", "hunter22"),
            ("xoxb-1234567890-abcdefghij", "1234567890"),
            ("whsec_abcdefghijklmnopqrstuvwxyz012345", "uvwxyz012345"),
            ("hf_abcdefghijklmnopqrstuvwx", "opqrstuvwx"),
        ];
        let filler = "an ordinary line of a long tool output\n".repeat(PARALLEL_MIN_BYTES / 30);
        let always = rules().iter().filter(|r| r.literals.is_empty()).count();
        for kept in 0..=secrets.len() {
            let texts: Vec<&str> = secrets[..kept].iter().map(|(text, _)| *text).collect();
            let text = format!("{filler}{}", texts.join("\n"));
            let on_two = rules_that_may_match_on(&text, true);
            assert_eq!(on_two, rules_that_may_match_on(&text, false));
            assert_eq!(on_two.iter().filter(|&&may| may).count() > always, kept > 0);
            let redacted = redact(&text);
            for (text, secret) in &secrets[..kept] {
                assert!(!redacted.contains(secret), "{text} survived");
            }
        }
    }

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
    fn redacts_keys_tokens_and_passwords_of_every_shape() {
        // Each text, and the part of it that is the secret.
        let cases = [
            (
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGPLANTEDpgp\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
                "PLANTEDpgp",
            ),
            (
                "cat id_rsa\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaPLANTEDcut",
                "PLANTEDcut",
            ),
            ("GITLAB_TOKEN glpat-PLANTEDgitlab0123456789", "PLANTEDgitlab"),
            (
                "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=PLANTED+az/key==;EndpointSuffix=core.windows.net",
                "PLANTED+az/key==",
            ),
            (
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=PLANTEDsas=",
                "PLANTEDsas",
            ),
            ("Authorization: Basic dXNlcjpQTEFOVEVE", "dXNlcjpQTEFOVEVE"),
            (r#"{"authorization": "basic dXNlcjpQTEFOVEVE"}"#, "dXNlcjpQTEFOVEVE"),
            (
                "SENDGRID SG.PLANTEDsendgrid01234.PLANTEDsecretpart0123456789abcdef",
                "PLANTEDsecretpart",
            ),
            ("my password is Pl4nted!Prose", "Pl4nted!Prose"),
            ("MY PaSsWoRd IS Pl4ntedMixed", "Pl4ntedMixed"),
            ("AUTHORIZATION: BASIC dXNlcjpNSVhFRA==", "dXNlcjpNSVhFRA"),
            ("The passphrase for the vault was: \"PLANTED phrase\"", "PLANTED"),
            ("Password was PLANTEDcaps.", "PLANTEDcaps"),
            (
                "git clone https://ada:hun@ter/22@example.com/r.git",
                "ter/22",
            ),
            ("redis://:PLANTED@redis@cache:6379/0", "PLANTED"),
            (
                "machine api.x.com login bob password PLANTEDnetrc",
                "PLANTEDnetrc",
            ),
            (
                "$ cat ~/.netrc\nmachine github.com\n  login ada\n  password PLANTEDlines\n",
                "PLANTEDlines",
            ),
            (
                "MACHINE api.x.com PASSWORD PLANTEDcase LOGIN bob",
                "PLANTEDcase",
            ),
            (
                "default login anonymous password PLANTEDdefault",
                "PLANTEDdefault",
            ),
            (
                "https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2030-01-01T00:00:00Z&sig=PLANTEDsas%2Bsig%3D",
                "PLANTEDsas",
            ),
            (
                "curl 'https://acct.queue.core.windows.net/q?sig=PLANTEDfirst&sv=2022-11-02'",
                "PLANTEDfirst",
            ),
            (
                "TWILIO_KEY SK0123456789abcdef0123456789ABCDEF",
                "0123456789abcdef0123456789ABCDEF",
            ),
        ];
        for (text, secret) in cases {
            let redacted = redact(text);
            assert!(!redacted.contains(secret), "{text}: {redacted}");
            assert!(redacted.contains("[REDACTED"), "{text}: {redacted}");
        }
        assert_eq!(
            redact("https://ada:p@ss/w@example.com/r.git"),
            "https://ada:[REDACTED]@example.com/r.git"
        );
        assert_eq!(
            redact("Authorization: Basic dXNlcjpwYXNz"),
            "Authorization: Basic [REDACTED]"
        );
        assert_eq!(
            redact("AccountName=a;AccountKey=abc==;EndpointSuffix=x"),
            "AccountName=a;AccountKey=[REDACTED];EndpointSuffix=x"
        );
        assert_eq!(
            redact("my password is hunter22"),
            "my password is [REDACTED]"
        );
        assert_eq!(
            redact("machine api.x.com login bob password s3cr3t"),
            "machine api.x.com login bob password [REDACTED]"
        );
        assert_eq!(
            redact("https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=abc%2Bdef%3D&x=1"),
            "https://a.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=[REDACTED]&x=1"
        );
        assert_eq!(
            redact("key SK0123456789abcdef0123456789abcdef."),
            "key [REDACTED]."
        );
    }

    #[test]
    fn leaves_ordinary_text_alone() {
        for text in [
            "ls -la src/",
            "the token count is 512",
            "def password_hash(x):",
            "https://example.com/a",
            "basic usage: see the authorization section",
            "SG.1 is the first section",
            "the password field is empty",
            // Twilio's shape exactly: `SK` then 32 hex digits, a word of its own.
            "SKIP the first step",
            "SKU SK0123456789abcdef0123456789abcde (31 digits)",
            "SK0123456789abcdef0123456789abcdef0 (33 digits)",
            "SK0123456789abcdefg123456789abcdef",
            "XSK0123456789abcdef0123456789abcdef",
            // `sig=` only as a URL's query parameter.
            "fn sig=signature(x)",
            "the design=sig=3 notes",
            // `.netrc`'s words in prose.
            "by default password auth is off",
            "the machine password policy",
            "machine learning is not a password",
        ] {
            assert_eq!(redact(text), text);
        }
    }
}
