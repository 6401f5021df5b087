//! Spans: the full-text index holds the words of a run of messages written together, not of
//! each message. Indexing every message's words was most of what storing a short message cost
//! the server (a message's words are mostly those of its neighbours: 64 short messages hold a
//! quarter of the entries they would alone). The first message of a span carries the span's
//! words (without positions) and its last `seq`; every message keeps its own words, with
//! positions, which a search then checks (`search.rs`).

use std::ops::Range;

use crate::words::{Words, MAX_VECTOR_BYTES};

/// Messages a span holds at most: a search reads at most this many per span it matches.
pub const SPAN_MESSAGES: usize = 64;

/// The spans of messages whose words are `words`, in order, each as the indexes of its
/// messages: at most [`SPAN_MESSAGES`], and fewer where their words would outgrow a vector (a
/// message alone always fits: its own vector does).
pub fn spans(words: &[Words]) -> Vec<Range<usize>> {
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

/// The span columns of each message of `words`, in order: the span's words and last `seq` on
/// the span's first message, nothing on the others. `seqs` are the messages' `seq`s.
pub fn span_columns(words: &[Words], seqs: &[i64]) -> Vec<Option<(Words, i64)>> {
    let mut columns: Vec<Option<(Words, i64)>> = Vec::with_capacity(words.len());
    for span in spans(words) {
        let last = seqs[span.end - 1];
        columns.push(Some((Words::union(&words[span.clone()]), last)));
        columns.extend((span.start + 1..span.end).map(|_| None));
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    #[test]
    fn spans_hold_at_most_their_messages_and_a_vectors_bytes() {
        let short: Vec<Words> = (0..130).map(|i| words(&format!("word {i}"))).collect();
        assert_eq!(spans(&short), [0..64, 64..128, 128..130]);
        // Messages of many distinct words: a span closes before its words outgrow a vector.
        let large: Vec<Words> = (0..5)
            .map(|m| {
                let text: Vec<String> = (0..40_000).map(|w| format!("w{m}x{w}")).collect();
                words(&text.join(" "))
            })
            .collect();
        assert!(large[0].bytes() > MAX_VECTOR_BYTES / 3);
        let cut = spans(&large);
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
        assert_eq!(spans(&[]), []);
    }

    #[test]
    fn a_spans_first_message_carries_the_words_of_all_and_its_last_seq() {
        let found = [words("Alpha beta"), words("beta GAMMA"), words("")];
        let columns = span_columns(&found, &[10, 11, 12]);
        let Some((union, last)) = &columns[0] else {
            panic!("the first message starts the span");
        };
        assert_eq!(*last, 12);
        assert_eq!(
            union.lexemes().collect::<Vec<_>>(),
            [&b"alpha"[..], b"beta", b"gamma"]
        );
        assert!(columns[1].is_none() && columns[2].is_none());
    }
}
