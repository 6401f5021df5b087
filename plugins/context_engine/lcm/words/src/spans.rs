//! Spans: the full-text index holds the words of a run of messages written together, not of
//! each message. Indexing every message's words was most of what storing a short message cost
//! the server (a message's words are mostly those of its neighbours: 64 short messages hold a
//! quarter of the entries they would alone). A span's row holds its words (without positions)
//! and the range of its messages; every message keeps its own words, with positions, which a
//! search then checks.

use std::ops::Range;

use crate::words::{Words, MAX_VECTOR_BYTES};

/// Messages a span holds at most: a search reads at most this many per span it matches.
pub const SPAN_MESSAGES: usize = 64;

/// A span: the indexes of its messages and the words of all of them.
#[derive(Debug)]
pub struct Span {
    pub messages: Range<usize>,
    pub words: Words,
}

/// The spans of the messages whose words are `words`, in order: at most [`SPAN_MESSAGES`]
/// each, and fewer where their words would outgrow a vector (a message alone always fits: its
/// own vector does).
pub fn spans(words: &[Words]) -> Vec<Span> {
    cut(words)
        .into_iter()
        .map(|messages| Span {
            words: Words::union(&words[messages.clone()]),
            messages,
        })
        .collect()
}

fn cut(words: &[Words]) -> Vec<Range<usize>> {
    let mut spans = Vec::with_capacity(words.len() / SPAN_MESSAGES + 1);
    let (mut start, mut bytes) = (0, 0);
    for (at, message) in words.iter().enumerate() {
        if at > start && (at - start == SPAN_MESSAGES || bytes + message.bytes() > MAX_VECTOR_BYTES)
        {
            spans.push(start..at);
            (start, bytes) = (at, 0);
        }
        bytes += message.bytes();
    }
    if start < words.len() {
        spans.push(start..words.len());
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    #[test]
    fn spans_hold_at_most_their_messages_and_a_vectors_bytes() {
        let short: Vec<Words> = (0..130).map(|i| words(&format!("word {i}"))).collect();
        assert_eq!(cut(&short), [0..64, 64..128, 128..130]);
        // Messages of many distinct words: a span closes before its words outgrow a vector.
        let large: Vec<Words> = (0..5)
            .map(|m| {
                let text: Vec<String> = (0..40_000).map(|w| format!("w{m}x{w}")).collect();
                words(&text.join(" "))
            })
            .collect();
        assert!(large[0].bytes() > MAX_VECTOR_BYTES / 3);
        let cut = cut(&large);
        assert_eq!(cut.first().map(|s| s.start), Some(0));
        assert_eq!(cut.last().map(|s| s.end), Some(5));
        for span in &cut {
            let bytes: usize = large[span.clone()].iter().map(Words::bytes).sum();
            assert!(
                span.len() == 1 || bytes <= MAX_VECTOR_BYTES,
                "{span:?}: {bytes}"
            );
        }
        assert!(cut.len() > 1);
        assert!(spans(&[]).is_empty());
    }

    #[test]
    fn a_span_holds_the_words_of_all_its_messages() {
        let found = [words("Alpha beta"), words("beta GAMMA"), words("")];
        let spans = spans(&found);
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].messages, 0..3);
        assert_eq!(
            spans[0].words.lexemes().collect::<Vec<_>>(),
            [&b"alpha"[..], b"beta", b"gamma"]
        );
    }
}
