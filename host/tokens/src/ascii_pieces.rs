//! `o200k_base`'s pre-tokenizer for ASCII text, without a regex.
//!
//! The encoding splits text with a pattern of alternatives tried in order at each position
//! (leftmost-first, as a backtracking engine would): words with an optional leading
//! non-letter and a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, any case), runs
//! of at most three digits, punctuation with an optional leading space and trailing line
//! breaks or slashes, whitespace up to its last line break, whitespace at the end of the text,
//! whitespace but its last character, and whitespace. On ASCII text, where the pattern's
//! Unicode classes are plain byte classes, that reads as the few byte tests below, several
//! times faster than the regex; other text goes to the regex. The tests compare both on the
//! corpus and on random text.

/// The pieces of `text`, which must be ASCII, as `o200k_base`'s pattern splits it.
pub fn pieces(text: &str) -> AsciiPieces<'_> {
    debug_assert!(text.is_ascii());
    AsciiPieces { text, at: 0 }
}

pub struct AsciiPieces<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for AsciiPieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        if start >= bytes.len() {
            return None;
        }
        let end = piece_end(bytes, start);
        self.at = end;
        Some(&self.text[start..end])
    }
}

/// `\s` (Unicode `White_Space`) in ASCII: tab, line feed, vertical tab, form feed, carriage
/// return and space.
fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

fn is_line_break(byte: u8) -> bool {
    matches!(byte, b'\r' | b'\n')
}

/// Neither whitespace, nor a letter, nor a digit: `[^\s\p{L}\p{N}]`.
fn is_punctuation(byte: u8) -> bool {
    !is_space(byte) && !byte.is_ascii_alphanumeric()
}

/// The end of the piece starting at `start` (`start < bytes.len()`).
fn piece_end(bytes: &[u8], start: usize) -> usize {
    let byte = bytes[start];
    if byte.is_ascii_alphabetic() {
        return word_end(bytes, start).expect("a word starts at a letter");
    }
    if byte.is_ascii_digit() {
        return run_end(bytes, start, |b| b.is_ascii_digit()).min(start + 3);
    }
    // A word may start with one character that is neither a line break, a letter nor a digit.
    if !is_line_break(byte) {
        if let Some(end) = word_end(bytes, start + 1) {
            return end;
        }
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    let punctuation_at = if byte == b' ' { start + 1 } else { start };
    if bytes
        .get(punctuation_at)
        .is_some_and(|&b| is_punctuation(b))
    {
        let end = run_end(bytes, punctuation_at, is_punctuation);
        return run_end(bytes, end, |b| is_line_break(b) || b == b'/');
    }
    // Whitespace from here on: `byte` is whitespace (punctuation returned above).
    let space_end = run_end(bytes, start, is_space);
    // `\s*[\r\n]+`: up to the last line break of the run.
    if let Some(last) = bytes[start..space_end]
        .iter()
        .rposition(|&b| is_line_break(b))
    {
        return start + last + 1;
    }
    // `\s+$`
    if space_end == bytes.len() {
        return space_end;
    }
    // `\s+(?!\S)`: the run but its last character, when that leaves one; else `\s+`.
    if space_end - start >= 2 {
        space_end - 1
    } else {
        space_end
    }
}

/// `[\p{Lu}...]*[\p{Ll}...]+` or `[\p{Lu}...]+[\p{Ll}...]*` from `at`, then an optional
/// contraction: where the word ends, if one starts at `at`.
fn word_end(bytes: &[u8], at: usize) -> Option<usize> {
    let upper_end = run_end(bytes, at, |b| b.is_ascii_uppercase());
    let lower_end = run_end(bytes, upper_end, |b| b.is_ascii_lowercase());
    if lower_end == at {
        return None;
    }
    Some(lower_end + contraction_len(&bytes[lower_end..]))
}

/// The length of the contraction `rest` starts with (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
/// `'d` in any case), or 0.
fn contraction_len(rest: &[u8]) -> usize {
    let Some((b'\'', after)) = rest.split_first() else {
        return 0;
    };
    let lower = |i: usize| after.get(i).map(u8::to_ascii_lowercase);
    match lower(0) {
        Some(b's' | b't' | b'm' | b'd') => 2,
        Some(b'r') if lower(1) == Some(b'e') => 3,
        Some(b'v') if lower(1) == Some(b'e') => 3,
        Some(b'l') if lower(1) == Some(b'l') => 3,
        _ => 0,
    }
}

/// The end of the run of bytes matching `class` from `at`.
fn run_end(bytes: &[u8], at: usize, class: impl Fn(u8) -> bool) -> usize {
    bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| !class(b))
        .map_or(bytes.len(), |length| at + length)
}

#[cfg(test)]
mod tests {
    use super::pieces;

    fn regex_pieces(text: &str) -> Vec<&str> {
        bpe_openai::o200k_base().split(text).collect()
    }

    #[test]
    fn splits_as_the_pattern_does() {
        for text in [
            "",
            "Hello world",
            "  leading and trailing  ",
            "HTTPServer don't I'LL we've they'RE x'",
            "fn main() {\n    println!(\"hi\");\n}\n\n\t\n  ",
            "12345 1.5e10 a1b2 __init__ ../src/a.rs //x \r\n/\r\n",
            " \t\x0b\x0c \x00\x1f\x7f  !?",
            "a 'b' ' 's 'S '",
        ] {
            assert_eq!(
                pieces(text).collect::<Vec<_>>(),
                regex_pieces(text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn random_ascii_splits_as_the_pattern_does() {
        // Characters of every class the pattern tells apart, and the contractions' letters.
        let alphabet = b"aZsStTrReEvVmMlLdDxQ09' \t\n\r\x0b\x0c/.-_(\x00\x1f\x7f";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let length = (next() % 24) as usize;
            let text: String = (0..length)
                .map(|_| char::from(alphabet[(next() % alphabet.len() as u64) as usize]))
                .collect();
            assert_eq!(
                pieces(&text).collect::<Vec<_>>(),
                regex_pieces(&text),
                "{text:?}"
            );
        }
    }
}
