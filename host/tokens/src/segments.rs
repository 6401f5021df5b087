//! An over-long text cut into segments that are counted one by one, so counting is linear in
//! time and bounded in memory whatever the text holds.
//!
//! Byte-pair merging costs more than linear time and tens of bytes of memory per byte of one
//! piece (a word, a run of punctuation: what the pre-tokenizer splits a text into), and
//! tiktoken's split pattern recurses per character: one piece of a few megabytes (a run of
//! `x`, a base64 blob, CJK text without spaces) took seconds and hundreds of megabytes to
//! count, and overflowed tiktoken's regex stack. A text longer than [`SEGMENT_BYTES`] is
//! therefore cut:
//! - where the pre-tokenizer cuts anyway, when it can: before a single space between two
//!   characters that are not whitespace. Every encoding's pattern (`o200k_base`, `cl100k_base`,
//!   `p50k_base`, `r50k_base`) starts a piece there (the space leads the next word or
//!   punctuation, or stands alone before digits), so the counts of the segments add up to the
//!   text's count exactly;
//! - otherwise (a run with no such space in a whole segment's length) every `hard` bytes, at a
//!   character boundary. That is the bounded rule: a cut inside a piece may count a token or two
//!   more than the piece merged whole, well under 1% of the piece's tokens.

/// Texts up to this long are counted whole.
pub const SEGMENT_BYTES: usize = 16 * 1024;

/// Where a run with no piece boundary is cut, for the backends whose merge costs O(n log n)
/// per piece (the rank table, bpe-openai): a multiple of 8 so a run of one byte cuts where its
/// own tokens end.
pub const HARD_CUT_BYTES: usize = 8 * 1024;

/// The same for tiktoken, whose merge rescans a piece's pairs after each merge (quadratic in
/// the piece): short enough that a run costs about what the same length of words does.
pub const TIKTOKEN_HARD_CUT_BYTES: usize = 256;

/// `text` cut into segments of at most `soft` bytes at piece boundaries, or of `hard` bytes
/// (at a character boundary) where a run has none. Texts up to `soft` bytes come back whole.
pub fn segments(text: &str, soft: usize, hard: usize) -> Segments<'_> {
    debug_assert!(hard > 0 && hard <= soft);
    Segments {
        text,
        at: 0,
        soft,
        hard,
    }
}

pub struct Segments<'a> {
    text: &'a str,
    at: usize,
    soft: usize,
    hard: usize,
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.at..];
        if rest.is_empty() {
            return None;
        }
        let end = if rest.len() <= self.soft {
            rest.len()
        } else {
            last_piece_boundary(rest, self.soft)
                .unwrap_or_else(|| floor_char_boundary(rest, self.hard))
        };
        self.at += end;
        Some(&rest[..end])
    }
}

/// The last offset in `text[1..=limit]` where a piece starts for certain: a space whose
/// neighbours are not whitespace. Only spaces are looked at closer: a run without one (a blob)
/// costs one vectorised search.
fn last_piece_boundary(text: &str, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut end = limit.min(bytes.len() - 1) + 1;
    while let Some(at) = memchr::memrchr(b' ', &bytes[1..end]) {
        let at = at + 1;
        if space_between_words(text, at) {
            return Some(at);
        }
        end = at;
    }
    None
}

/// Whether the space at `at` has a character that is not whitespace on either side.
fn space_between_words(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + 1..].chars().next();
    matches!((before, after), (Some(b), Some(a)) if !b.is_whitespace() && !a.is_whitespace())
}

/// The largest character boundary of `text` at or below `limit`, and at least one character.
fn floor_char_boundary(text: &str, limit: usize) -> usize {
    let mut end = limit.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        text.chars().next().map_or(0, char::len_utf8)
    } else {
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_come_back_whole() {
        let text = "a few words";
        assert_eq!(segments(text, 64, 8).collect::<Vec<_>>(), [text]);
        assert_eq!(segments("", 64, 8).count(), 0);
    }

    #[test]
    fn segments_cover_the_text_in_order_and_respect_the_limits() {
        let texts = [
            "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(40),
            "x".repeat(1000),
            "日本語のテキスト".repeat(60),
            format!("{} then {}", "word ".repeat(50), "y".repeat(700)),
            "a  b\n\nc\t d ".repeat(80),
        ];
        for text in &texts {
            let cut: Vec<&str> = segments(text, 64, 16).collect();
            assert_eq!(cut.concat(), *text);
            for segment in &cut {
                assert!(!segment.is_empty());
                assert!(segment.len() <= 64, "{segment:?}");
            }
        }
    }

    #[test]
    fn text_with_spaces_is_cut_only_before_a_space_between_words() {
        let text = "alpha beta  gamma\n delta epsilon ".repeat(30);
        let cut: Vec<&str> = segments(&text, 48, 8).collect();
        for pair in cut.windows(2) {
            let next = pair[1];
            assert!(next.starts_with(' '), "{next:?}");
            assert!(!next[1..].starts_with(char::is_whitespace), "{next:?}");
            assert!(!pair[0].ends_with(char::is_whitespace), "{:?}", pair[0]);
        }
    }

    #[test]
    fn a_run_without_spaces_is_cut_every_hard_bytes_at_character_boundaries() {
        let text = "é".repeat(100);
        let cut: Vec<&str> = segments(&text, 64, 15).collect();
        assert_eq!(cut.concat(), text);
        let (last, before) = cut.split_last().expect("segments");
        assert!(before.iter().all(|s| s.len() == 14), "{cut:?}");
        assert!(last.len() <= 64);
        let run = "x".repeat(100);
        let lengths: Vec<usize> = segments(&run, 64, 16).map(str::len).collect();
        // Cut every 16 bytes until what is left fits a segment.
        assert_eq!(lengths, [16, 16, 16, 52]);
    }
}
