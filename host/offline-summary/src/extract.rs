//! Facts read out of a turn's text: file paths, commands, errors, decisions, constraints and
//! next steps.

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::Value;

use crate::budget::truncate_bytes;
use crate::markers::Markers;

/// `text` on one line (whitespace collapsed), cut to `max_bytes`.
pub fn compact(text: &str, max_bytes: usize) -> String {
    // Joined only as far as the cut: past `max_bytes` the rest cannot change it (a long
    // output's first line is all an item keeps).
    let mut line = String::new();
    for word in text.split_whitespace() {
        if line.len() > max_bytes {
            break;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    truncate_bytes(&line, max_bytes).into_owned()
}

/// Whether `text` mentions `topic` (case-insensitive).
pub fn mentions(text: &str, topic: &str) -> bool {
    !topic.is_empty() && text.to_lowercase().contains(&topic.to_lowercase())
}

// ---------------------------------------------------------------------------------------------
// Paths

const EXTENSIONS: &[&str] = &[
    "rs",
    "py",
    "pyi",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "cs",
    "swift",
    "mm",
    "rb",
    "php",
    "pl",
    "lua",
    "jl",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "clj",
    "dart",
    "zig",
    "nim",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "md",
    "rst",
    "txt",
    "adoc",
    "toml",
    "yaml",
    "yml",
    "json",
    "jsonl",
    "json5",
    "ini",
    "cfg",
    "conf",
    "env",
    "lock",
    "xml",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "vue",
    "svelte",
    "sql",
    "csv",
    "tsv",
    "proto",
    "graphql",
    "gql",
    "ipynb",
    "tf",
    "hcl",
    "gradle",
    "cmake",
    "mk",
    "patch",
    "diff",
    "log",
    "pem",
    "dockerfile",
    "tex",
    "bib",
    "wasm",
    "so",
    "dll",
    "dylib",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "pdf",
    "zip",
    "tar",
    "gz",
];

const BARE_FILE_NAMES: &[&str] = &[
    "Makefile",
    "Dockerfile",
    "Containerfile",
    "Justfile",
    "Rakefile",
    "Gemfile",
    "Procfile",
    "Vagrantfile",
    "CMakeLists.txt",
    "LICENSE",
    "README",
];

/// File paths mentioned in `text`, in order of first mention, without duplicates.
pub fn paths<'a>(text: &'a str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    // Tool outputs list the same files over and over: a set keeps this linear.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut note = |word: &'a str, hints: u8| {
        if !could_be_path(word, hints) || is_closing_tag(text, word) {
            return;
        }
        if let Some(path) = as_path(word) {
            if seen.insert(path) {
                found.push(path.to_string());
            }
        }
    };
    if text.is_ascii() {
        for_candidate_words(text, note);
    } else {
        for word in text.split(breaks_word) {
            let hints = word
                .bytes()
                .filter(u8::is_ascii)
                .fold(0, |hints, byte| hints | ascii_classes()[usize::from(byte)]);
            note(word, hints);
        }
    }
    found
}

/// Whether `word` (a slice of `text`) is the name of an HTML or XML closing tag (`</title>`
/// gives `/title`): a page a tool fetched names no file that way.
fn is_closing_tag(text: &str, word: &str) -> bool {
    let at = (word.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    at > 0
        && at <= text.len()
        && text.as_bytes()[at - 1] == b'<'
        && word.starts_with('/')
        && !word[1..].contains(['/', '.'])
}

/// Calls `note` with each word of ASCII `text` that [`could_be_path`] may accept, in order, and
/// its hints. Only a word holding a path byte or a bare file name can be a path: those are
/// found by searching for them (a vectorized scan that skips most of a text), then the words
/// around them are read; the rest of the text is never split.
fn for_candidate_words<'a>(text: &'a str, mut note: impl FnMut(&'a str, u8)) {
    let bytes = text.as_bytes();
    let classes = ascii_classes();
    let is_break = |byte: &u8| classes[usize::from(*byte)] == WORD_BREAK;
    let mut path_bytes = memchr::memchr3_iter(b'/', b'\\', b'.', bytes).peekable();
    let mut names: Vec<usize> = bare_file_name_parts()
        .iter()
        .flat_map(|part| part.find_iter(bytes))
        .collect();
    names.sort_unstable();
    let mut names = names.into_iter().peekable();
    // Where the last word read ended: a candidate before it is in that word.
    let mut read_to = 0;
    while let Some(at) = match (path_bytes.peek(), names.peek()) {
        (Some(&byte), Some(&name)) => Some(byte.min(name)),
        (byte, name) => byte.or(name).copied(),
    } {
        path_bytes.next_if_eq(&at);
        names.next_if_eq(&at);
        if at < read_to {
            continue;
        }
        let start = bytes[read_to..at]
            .iter()
            .rposition(is_break)
            .map_or(read_to, |i| read_to + i + 1);
        let end = bytes[at..]
            .iter()
            .position(is_break)
            .map_or(bytes.len(), |i| at + i);
        let hints = bytes[start..end]
            .iter()
            .fold(0, |hints, &byte| hints | classes[usize::from(byte)]);
        note(&text[start..end], hints);
        read_to = end;
    }
}

/// What every [`BARE_FILE_NAMES`] entry without a path byte holds one of (a test checks it):
/// the words holding one are the candidates for a bare file name.
const BARE_FILE_NAME_PARTS: [&str; 3] = ["file", "LICENSE", "README"];

fn bare_file_name_parts() -> &'static [memchr::memmem::Finder<'static>] {
    static PARTS: OnceLock<Vec<memchr::memmem::Finder<'static>>> = OnceLock::new();
    PARTS.get_or_init(|| {
        BARE_FILE_NAME_PARTS
            .iter()
            .map(memchr::memmem::Finder::new)
            .collect()
    })
}

/// Where [`paths`] splits a text into words: whitespace, quotes, brackets and the punctuation
/// around paths in prose and code.
fn breaks_word(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\''
                | '`'
                | '('
                | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | '<'
                | '>'
                | ','
                | ';'
                | '|'
                | '='
        )
}

/// What an ASCII byte is to [`paths`]: where words break, or the hints a word's bytes give.
const WORD_BREAK: u8 = 1;
/// `/`, a backslash (Windows) or `.` (before an extension): every path but a bare file name
/// holds one.
const PATH_BYTE: u8 = 2;
/// A capital: [`BARE_FILE_NAMES`] all start with one.
const CAPITAL: u8 = 4;

fn ascii_classes() -> &'static [u8; 128] {
    static CLASSES: OnceLock<[u8; 128]> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let mut classes = [0; 128];
        for (byte, class) in (0u8..).zip(classes.iter_mut()) {
            let c = char::from(byte);
            *class = if breaks_word(c) {
                WORD_BREAK
            } else if matches!(c, '/' | '\\' | '.') {
                PATH_BYTE
            } else if c.is_ascii_uppercase() {
                CAPITAL
            } else {
                0
            };
        }
        classes
    })
}

/// A cheap necessary condition for [`as_path`], which most words of a text fail, from the
/// word's `hints` (its bytes' classes).
fn could_be_path(word: &str, hints: u8) -> bool {
    hints & PATH_BYTE != 0
        || (hints & CAPITAL != 0
            && word.len() >= SHORTEST_BARE_FILE_NAME
            && BARE_FILE_NAMES.iter().any(|name| word.contains(name)))
}

/// The length of the shortest of [`BARE_FILE_NAMES`].
const SHORTEST_BARE_FILE_NAME: usize = {
    let mut shortest = usize::MAX;
    let mut index = 0;
    while index < BARE_FILE_NAMES.len() {
        if BARE_FILE_NAMES[index].len() < shortest {
            shortest = BARE_FILE_NAMES[index].len();
        }
        index += 1;
    }
    shortest
};

/// `token` as a file path (a part of it), if it looks like one.
fn as_path(token: &str) -> Option<&str> {
    let token = token
        .trim_end_matches(['.', ':', '!', '?'])
        .trim_start_matches(['@', '+']);
    if token.len() < 2 || token.len() > 260 || holds_scheme(token) || token.starts_with("//") {
        return None;
    }
    // `src/lib.rs:42:7` names `src/lib.rs`.
    let token = strip_line_suffix(token);
    if !token.chars().all(|c| {
        c.is_alphanumeric()
            || matches!(
                c,
                '/' | '\\' | '.' | '_' | '-' | '~' | '+' | '@' | ':' | '%'
            )
    }) {
        return None;
    }
    if !token.chars().any(char::is_alphabetic) {
        return None;
    }
    let windows = token.len() > 3
        && token.as_bytes()[0].is_ascii_alphabetic()
        && &token.as_bytes()[1..3] == b":\\";
    if windows {
        return Some(token);
    }
    if token.contains(':') {
        return None;
    }
    let name = token.rsplit('/').next().unwrap_or(token);
    let named_file = has_known_extension(name) || BARE_FILE_NAMES.contains(&name);
    let rooted = token.starts_with('/')
        || token.starts_with("./")
        || token.starts_with("../")
        || token.starts_with("~/");
    if token.contains('/') {
        if token.ends_with('/') && !rooted {
            return None;
        }
        // `and/or`-style words are not paths; rooted ones and those naming a file are.
        if (rooted && token.len() > 2) || named_file {
            return Some(token.trim_end_matches('/')).filter(|p| !p.is_empty());
        }
        return None;
    }
    named_file.then_some(token)
}

/// Whether `token` holds `://` (a URL's scheme separator), looked for from its colons.
fn holds_scheme(token: &str) -> bool {
    let bytes = token.as_bytes();
    memchr::memchr_iter(b':', bytes).any(|at| bytes[at + 1..].starts_with(b"//"))
}

/// Whether `path` names a file (rather than a directory): a known extension or file name.
pub fn names_file(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
    has_known_extension(name) || BARE_FILE_NAMES.contains(&name)
}

/// Whether two paths name the same file: equal, or one is the other with leading
/// directories (`src/a.rs` and `/repo/src/a.rs`).
pub fn same_file(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long.ends_with(short)
        && (long.len() == short.len() || long.as_bytes()[long.len() - short.len() - 1] == b'/')
}

fn strip_line_suffix(token: &str) -> &str {
    let mut token = token;
    for _ in 0..2 {
        match token.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
                token = head;
            }
            _ => break,
        }
    }
    token
}

/// Whether `ext` is one of [`EXTENSIONS`], in any case. Code is full of `a.b` words that
/// have to be looked up, hence a set.
fn is_known_extension(ext: &str) -> bool {
    static KNOWN: OnceLock<HashSet<&str>> = OnceLock::new();
    const LONGEST: usize = 16;
    // The extensions are short and ASCII: anything else is none of them.
    if ext.len() > LONGEST || !ext.is_ascii() {
        return false;
    }
    let mut lower = [0u8; LONGEST];
    lower[..ext.len()].copy_from_slice(ext.as_bytes());
    lower[..ext.len()].make_ascii_lowercase();
    let Ok(lower) = std::str::from_utf8(&lower[..ext.len()]) else {
        return false;
    };
    KNOWN
        .get_or_init(|| {
            debug_assert!(EXTENSIONS.iter().all(|e| e.len() <= LONGEST));
            EXTENSIONS.iter().copied().collect()
        })
        .contains(lower)
}

fn has_known_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() || name.starts_with('.') => {
            is_known_extension(ext) && stem.chars().any(char::is_alphabetic) && !stem.ends_with('.')
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Lines of `text` that report an error, a traceback reduced to its final exception line.
pub fn error_lines(text: &str) -> Vec<String> {
    // Most outputs hold no error at all.
    if !may_report_errors(text) {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line
            .trim_start()
            .starts_with("Traceback (most recent call last)")
        {
            // The exception is the first unindented line after the frames.
            let mut j = i + 1;
            while j < lines.len()
                && (lines[j].starts_with(char::is_whitespace) || lines[j].trim().is_empty())
            {
                j += 1;
            }
            let exception = lines.get(j).map_or("Traceback", |l| l.trim());
            found.push(format!("Traceback: {exception}"));
            i = j + 1;
            continue;
        }
        if is_error_line(line) {
            found.push(line.trim().to_string());
        }
        i += 1;
    }
    found
}

/// Whether one line reports an error, a failure or a non-zero exit code. Numbered source
/// listings (`12: ...`, as file viewers and `grep -n` print them) are code, not errors.
pub fn is_error_line(line: &str) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() || is_listing_line(trimmed) {
        return false;
    }
    // A bare heading such as `ERRORS:` or `failures:` introduces errors; the lines after it
    // say what they are.
    if trimmed.ends_with(':') && !trimmed.contains(char::is_whitespace) {
        return false;
    }
    if !may_report_errors(trimmed) {
        return false;
    }
    let lower = trimmed.to_lowercase();
    if let Some(code) = exit_code(&lower) {
        return code != 0;
    }
    if ALWAYS_ERRORS.any_in(trimmed) {
        return true;
    }
    if names_exception(trimmed)
        || word_with_message(&lower, "error:")
        || word_with_message(&lower, "exception:")
    {
        return true;
    }
    // `failed` and the like, unless they count nothing (`0 failed`, `failures=0`).
    for word in ["failed", "failure", "failures", "errors", "error"] {
        for (start, end) in word_matches(&lower, word) {
            let before = lower[..start].trim_end();
            let after = lower[end..].trim_start();
            let zero = before.ends_with(" 0")
                || before == "0"
                || before.ends_with("no")
                || ["=0", "= 0", ":0", ": 0"]
                    .iter()
                    .any(|z| after.starts_with(z));
            if zero {
                continue;
            }
            let counted = before
                .rsplit(|c: char| !c.is_ascii_digit())
                .next()
                .is_some_and(|n| !n.is_empty());
            let shouted = trimmed.len() == lower.len()
                && trimmed
                    .get(start..end)
                    .is_some_and(|w| w.chars().all(|c| c.is_ascii_uppercase()));
            let accepted = match word {
                // Plain "errors" is prose unless counted ("3 errors") or shouted.
                "errors" => counted || shouted,
                // A bare "error" counts as a log level or in "an error occurred".
                "error" => shouted || after.starts_with("occurred") || after.starts_with("while"),
                _ => true,
            };
            if accepted {
                return true;
            }
        }
    }
    false
}

/// Markers that make a line an error whatever surrounds them.
const ALWAYS_ERROR_MARKERS: &[&str] = &[
    "error[",
    "fatal:",
    "panicked at",
    "traceback (most recent call last)",
    "command not found",
    "no such file or directory",
    "permission denied",
    "segmentation fault",
    "timed out",
    "non-zero exit",
    "nonzero exit",
    "could not compile",
    "npm err!",
];
static ALWAYS_ERRORS: Markers = Markers::new(ALWAYS_ERROR_MARKERS);

/// Every error line holds an [`ALWAYS_ERRORS`] marker or one of these: what [`exit_code`]
/// reads, `exception:` or `error` (`Error:` of [`names_exception`] included), `fail`. Most
/// lines and outputs hold none, and are passed over in one scan.
static ERROR_HINTS: Markers = Markers::either(
    &[
        "error",
        "fail",
        "exit",
        "returncode",
        "return code",
        "exception:",
    ],
    ALWAYS_ERROR_MARKERS,
);

/// Whether `text` may hold an error line.
fn may_report_errors(text: &str) -> bool {
    ERROR_HINTS.any_in(text)
}

/// `12: code` or `12| code`: a line of a numbered listing.
fn is_listing_line(trimmed: &str) -> bool {
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(trimmed.as_bytes().get(digits), Some(b':' | b'|'))
}

/// Whole-word occurrences of `word` in `lower` (word characters: alphanumerics and `_`).
fn word_matches<'a>(lower: &'a str, word: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    lower.match_indices(word).filter_map(move |(start, _)| {
        let end = start + word.len();
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        let before_ok = lower[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word(c));
        let after_ok = lower[end..].chars().next().is_none_or(|c| !is_word(c));
        (before_ok && after_ok).then_some((start, end))
    })
}

/// `marker` (ending in `:`) as a word, followed by a message: `error: cannot open x`, but not
/// code such as `except E as error:`.
fn word_with_message(lower: &str, marker: &str) -> bool {
    lower.match_indices(marker).any(|(start, _)| {
        let before_ok = lower[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        before_ok && !lower[start + marker.len()..].trim().is_empty()
    })
}

/// `ValueError: ...`, `E   AssertionError: ...`, `requests.HTTPError: ...`, but not the
/// `except ValueError:` of code.
fn names_exception(trimmed: &str) -> bool {
    let first = trimmed.split_whitespace().next().unwrap_or("");
    if matches!(
        first,
        "except" | "raise" | "class" | "def" | "catch" | "throw" | "throws"
    ) {
        return false;
    }
    trimmed.split_whitespace().any(|token| {
        let Some(name) = token.strip_suffix(':') else {
            return false;
        };
        let last = name.rsplit('.').next().unwrap_or(name);
        (last.ends_with("Error") || last.ends_with("Exception"))
            && last.starts_with(|c: char| c.is_ascii_uppercase())
            && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The code in `exit code N`, `exit status N`, `exited with N`, `returncode=N`.
fn exit_code(lower: &str) -> Option<i64> {
    for marker in [
        "exit code",
        "exit status",
        "exited with code",
        "exited with",
        "returncode",
        "return code",
    ] {
        if let Some(at) = lower.find(marker) {
            let rest = lower[at + marker.len()..].trim_start_matches([' ', ':', '=', '(']);
            let number: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(code) = number.parse() {
                return Some(code);
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Sentences

/// Sentences of `text`: lines split after `. `, `! ` and `? `.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for i in 0..bytes.len() {
            if matches!(bytes[i], b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_some_and(|b| *b == b' ')
            {
                out.push(line[start..=i].trim());
                start = i + 1;
            }
        }
        out.push(line[start..].trim());
    }
    out.retain(|s| s.chars().any(char::is_alphanumeric));
    out
}

/// A choice made: "decided", "instead", "will use", ...
pub fn is_decision(sentence: &str) -> bool {
    DECISION.any_in(sentence)
}

static DECISION: Markers = Markers::new(&[
    "decided",
    "decide to",
    "decision",
    "instead",
    "rather than",
    "will use",
    "we'll use",
    "i'll use",
    "going to use",
    "let's use",
    "let's go with",
    "go with",
    "chose",
    "choose",
    "opted",
    "switch to",
    "switched to",
    "settled on",
]);

/// A user's rule or preference: "must", "don't", "always", "prefer", ... A nudge of a few
/// words ("ok, keep going", "keep at it") binds nothing unless it says never, always or must.
pub fn is_constraint(sentence: &str) -> bool {
    CONSTRAINT.any_in(sentence)
        && (sentence.split_whitespace().count() > NUDGE_WORDS || BINDING.any_in(sentence))
}

/// At most this many words with a soft marker ("keep", "avoid") are a nudge, not a rule.
const NUDGE_WORDS: usize = 3;

/// Markers that bind however short the sentence ("Never push.").
static BINDING: Markers = Markers::new(&["must", "don't", "do not", "never", "always"]);

static CONSTRAINT: Markers = Markers::new(&[
    "must",
    "don't",
    "do not",
    "never",
    "always",
    "prefer",
    "avoid",
    "make sure",
    "should not",
    "shouldn't",
    "only use",
    "without ",
    "keep ",
    "no more than",
    "at most",
    "at least",
]);

/// What is still to do: "next", "TODO", "need to", ...
pub fn is_next_step(sentence: &str) -> bool {
    NEXT_STEP.any_in(sentence)
}

static NEXT_STEP: Markers = Markers::new(&[
    "next step",
    "next,",
    "next i",
    "next we",
    "then i'll",
    "then we",
    "todo",
    "need to",
    "needs to",
    "still need",
    "remaining",
    "i will ",
    "i'll ",
    "we will ",
    "we'll ",
    "left to do",
]);

// ---------------------------------------------------------------------------------------------
// Tool calls and commands

const SHELL_TOOLS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "shell",
    "terminal",
    "exec",
    "execute",
    "run",
    "cmd",
    "command",
    "powershell",
    "console",
];

/// Whether a tool runs shell commands (by its name).
pub fn is_shell_tool(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|part| SHELL_TOOLS.contains(&part))
}

/// What a tool call did, read from its name and arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFacts {
    /// A shell command it ran.
    pub command: Option<String>,
    /// The file it targeted (from a `path`-like argument).
    pub path: Option<String>,
    /// The sub-action, e.g. `view` / `str_replace` for an editor tool.
    pub action: Option<String>,
    /// A search pattern or query.
    pub query: Option<String>,
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "output_path",
    "notebook_path",
    "dir",
    "directory",
    "workdir",
    "cwd",
];
const QUERY_KEYS: &[&str] = &["pattern", "query", "regex", "search", "search_term", "url"];

pub fn call_facts(name: &str, arguments: &str) -> CallFacts {
    let shell = is_shell_tool(name);
    let parsed: Option<Value> = serde_json::from_str(arguments.trim()).ok();
    let object = parsed.as_ref().and_then(Value::as_object);
    let string_at = |keys: &[&str]| -> Option<String> {
        let object = object?;
        keys.iter().find_map(|key| match object.get(*key)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::Array(items) => {
                let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                (!words.is_empty()).then(|| words.join(" "))
            }
            _ => None,
        })
    };
    let mut facts = CallFacts {
        command: None,
        path: string_at(PATH_KEYS),
        action: None,
        query: string_at(QUERY_KEYS),
    };
    let command_value = string_at(&["command", "cmd", "script", "commands"]);
    match (object, command_value) {
        (Some(_), Some(command)) => {
            // An editor's `command: view` is a sub-action, not a shell command.
            let is_verb = !command.contains(char::is_whitespace)
                && command.chars().all(|c| c.is_ascii_alphabetic() || c == '_');
            if shell || !is_verb {
                facts.command = Some(command);
            } else {
                facts.action = Some(command);
            }
        }
        (None, _) if shell && !arguments.trim().is_empty() => {
            facts.command = Some(arguments.trim().to_string());
        }
        _ => {}
    }
    if facts.action.is_none() {
        facts.action = string_at(&["action", "operation", "mode"]);
    }
    facts
}

/// Commands typed at a prompt inside `text`: lines starting with `$ `.
pub fn prompt_commands(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let command = line.trim_start().strip_prefix("$ ")?.trim();
            (!command.is_empty()).then(|| (i, command.to_string()))
        })
        .collect()
}

/// The command in a fenced block that ends `text` (untagged or tagged as a shell), or in a
/// `<command>` element that ends it, the ways text-only agents (SWE-agent and other
/// ReAct-style loops) issue commands.
pub fn trailing_command(text: &str) -> Option<String> {
    // SWE-agent's other format: the command in a `<command>` element ending the turn.
    if let Some(body) = text.trim_end().strip_suffix("</command>") {
        let open = body.rfind("<command>")?;
        let command = body[open + "<command>".len()..].trim();
        return (!command.is_empty()).then(|| command.to_string());
    }
    let body = text.trim_end().strip_suffix("```")?;
    let open = body.rfind("```")?;
    let block = &body[open + 3..];
    let (tag, command) = block.split_once('\n')?;
    let tag = tag.trim().to_ascii_lowercase();
    if !matches!(
        tag.as_str(),
        "" | "bash" | "sh" | "shell" | "console" | "zsh"
    ) {
        return None;
    }
    let command = command.trim();
    (!command.is_empty()).then(|| command.to_string())
}

/// How a tool touched a file, from the tool's name and sub-action.
pub fn file_verb(name: &str, action: Option<&str>) -> Option<&'static str> {
    action.and_then(verb_of).or_else(|| verb_of(name))
}

fn verb_of(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let parts: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect();
    let has = |words: &[&str]| parts.iter().any(|p| words.contains(p));
    if has(&["create", "write", "save", "new"]) {
        Some("written")
    } else if has(&[
        "edit", "patch", "replace", "insert", "apply", "modify", "update", "append",
    ]) {
        Some("edited")
    } else if has(&["delete", "remove", "rm", "unlink"]) {
        Some("deleted")
    } else if has(&["read", "view", "open", "cat", "show", "get"]) {
        Some("read")
    } else if has(&["search", "grep", "find", "glob", "list", "ls"]) {
        Some("searched")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_nudge_is_not_a_constraint_but_a_short_rule_is() {
        assert!(!is_constraint("ok, keep going"));
        assert!(!is_constraint("keep at it"));
        assert!(is_constraint("Never push."));
        assert!(is_constraint("Keep every PR under 400 lines."));
    }
    use super::*;

    /// What [`paths`] found before it searched for candidates: every word of the text split
    /// and offered to `could_be_path`.
    fn paths_word_by_word(text: &str) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let classes = ascii_classes();
        let words = text
            .as_bytes()
            .split(|&b| classes[usize::from(b)] == WORD_BREAK);
        let mut at = 0;
        for word in words {
            let word_text = &text[at..at + word.len()];
            at += word.len() + 1;
            let hints = word.iter().fold(0, |h, &b| h | classes[usize::from(b)]);
            if let Some(path) = could_be_path(word_text, hints)
                .then(|| as_path(word_text))
                .flatten()
            {
                if !found.iter().any(|f| f == path) {
                    found.push(path.to_string());
                }
            }
        }
        found
    }

    #[test]
    fn closing_tags_are_not_paths() {
        let page = "<html><head><title>Login</title></head><body>é <form action=\"/login\"></form>\
                    see </body></html> and /etc/hosts, <a href=\"/static/app.js\">";
        let found = paths(page);
        for tag in ["/title", "/head", "/form", "/body", "/html"] {
            assert!(!found.iter().any(|p| p == tag), "{tag} in {found:?}");
        }
        for path in ["/etc/hosts", "/static/app.js"] {
            assert!(found.iter().any(|p| p == path), "{path} not in {found:?}");
        }
        assert_eq!(paths(&page.replace('é', "e")), paths(page));
    }

    #[test]
    fn every_bare_file_name_is_found_as_a_candidate() {
        for name in BARE_FILE_NAMES {
            let path_byte = name.contains(['/', '\\', '.']);
            let part = BARE_FILE_NAME_PARTS.iter().any(|part| name.contains(part));
            assert!(path_byte || part, "{name} would never be a candidate word");
        }
    }

    #[test]
    fn candidate_words_find_what_every_word_finds() {
        let pieces = [
            "src/lib.rs",
            "./run.sh",
            "/etc/hosts",
            "Cargo.toml",
            "Makefile",
            "xMakefile",
            "CMakeLists.txt",
            "LICENSE",
            "README.md",
            "and/or",
            "3.14",
            "e.g.",
            "self.model",
            "a\\b.txt",
            "C:\\x\\y.txt",
            "https://e.com/a.rs",
            "word",
            "Word",
            "file",
            ".",
            "/",
            "..",
            "~/x.py",
            "x.py:3:4",
            "(a/b.rs)",
            "'q.py'",
            "`t.c`",
            "a,b.go;c.rs",
            "=",
            " ",
            "\n",
            "\t",
            "[",
            "]",
            "{x.js}",
            "<y.ts>",
            "|z.rb|",
            "Dockerfile.",
            "READMEs",
        ];
        let mut texts = crate::test_texts::TextMaker::new(&pieces);
        for _ in 0..2_000 {
            let text = texts.text(40, |random, text| {
                if random.is_multiple_of(3) {
                    text.push(' ');
                }
            });
            assert_eq!(paths(&text), paths_word_by_word(&text), "{text:?}");
        }
    }

    #[test]
    fn paths_are_found_and_noise_is_not() {
        let text = "Edited src/lib.rs:42:7 and ./run.sh, read /etc/hosts; see Cargo.toml. \
                    Not paths: and/or, 3.14, e.g., self.model, https://example.com/a.rs, 1/2";
        assert_eq!(
            paths(text),
            ["src/lib.rs", "./run.sh", "/etc/hosts", "Cargo.toml"]
        );
        assert_eq!(
            paths(r#"{"path": "tests/test_x.py"} File "/app/x.py", line 3"#),
            ["tests/test_x.py", "/app/x.py"]
        );
    }

    #[test]
    fn ascii_and_other_text_split_into_the_same_paths() {
        let ascii = "see src/a.rs, Makefile and (docs/b.md); \\not a path; C:\\x\\y.txt LICENSE.";
        let expected = [
            "src/a.rs",
            "Makefile",
            "docs/b.md",
            "C:\\x\\y.txt",
            "LICENSE",
        ];
        assert_eq!(paths(ascii), expected);
        // One non-ASCII word takes the character-by-character split: same paths.
        assert_eq!(paths(&format!("{ascii} café")), expected);
        // Unicode whitespace (a no-break space) separates words too.
        assert_eq!(paths("src/a.rs\u{a0}src/b.rs"), ["src/a.rs", "src/b.rs"]);
    }

    #[test]
    fn error_lines_cover_the_usual_shapes() {
        let text = "Compiling x\nerror[E0308]: mismatched types\ntest result: ok. 3 passed; 0 failed\n\
                    FAILED tests/test_a.py::test_b\nProcess exited with code 2\nexit code 0\n\
                    Traceback (most recent call last):\n  File \"a.py\", line 1\n    x()\nValueError: bad\nafter";
        assert_eq!(
            error_lines(text),
            [
                "error[E0308]: mismatched types",
                "FAILED tests/test_a.py::test_b",
                "Process exited with code 2",
                "Traceback: ValueError: bad",
            ]
        );
        assert!(!is_error_line("no errors found"));
        assert!(!is_error_line("errors: 0"));
        assert!(!is_error_line("handle_error_case()"));
        assert!(!is_error_line("    except FieldError as error:"));
        assert!(!is_error_line(
            "1432: Always serializes to avoid rounding errors."
        ));
        assert!(!is_error_line("this avoids rounding errors"));
        assert!(is_error_line("E999 IndentationError: unexpected indent"));
        assert!(is_error_line("Found 2 errors"));
        assert!(is_error_line("FAILED (failures=1)"));
        assert!(!is_error_line("OK (failures=0)"));
        assert!(is_error_line("src/a.c:3:1: error: expected ';'"));
    }

    #[test]
    fn call_facts_read_json_arguments() {
        let facts = call_facts("bash", r#"{"command": "cargo test -p x"}"#);
        assert_eq!(facts.command.as_deref(), Some("cargo test -p x"));
        let facts = call_facts(
            "str_replace_based_edit_tool",
            r#"{"command": "view", "path": "src/a.rs"}"#,
        );
        assert_eq!(facts.command, None);
        assert_eq!(facts.action.as_deref(), Some("view"));
        assert_eq!(facts.path.as_deref(), Some("src/a.rs"));
        assert_eq!(
            call_facts("terminal", "ls -la").command.as_deref(),
            Some("ls -la")
        );
        assert_eq!(
            file_verb("str_replace_based_edit_tool", Some("view")),
            Some("read")
        );
        assert_eq!(file_verb("apply_patch", None), Some("edited"));
        assert_eq!(file_verb("terminal", None), None);
    }

    #[test]
    fn trailing_fenced_commands() {
        assert_eq!(
            trailing_command("Let's list files.\n```\nls -F\n```\n").as_deref(),
            Some("ls -F")
        );
        assert_eq!(trailing_command("Fix:\n```rust\nfn x() {}\n```"), None);
        assert_eq!(trailing_command("no block"), None);
        assert_eq!(
            trailing_command("Now submit.\n<command>\nsubmit\n</command>\n").as_deref(),
            Some("submit")
        );
    }

    #[test]
    fn compact_cuts_as_joining_everything_would() {
        let text = "  first\tline of a long\n\n output: é€ ".repeat(40);
        let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for max in [
            0,
            1,
            2,
            3,
            4,
            5,
            20,
            33,
            100,
            239,
            240,
            241,
            joined.len(),
            5_000,
        ] {
            assert_eq!(compact(&text, max), truncate_bytes(&joined, max), "{max}");
        }
    }

    #[test]
    fn sentences_split_on_punctuation() {
        assert_eq!(
            sentences("We decided to use X. Then run it!\nNext line"),
            ["We decided to use X.", "Then run it!", "Next line"]
        );
    }
}
