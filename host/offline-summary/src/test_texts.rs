//! Random texts for tests that compare a fast reading with a plain one: pieces joined in an
//! order that is the same on every run (xorshift from a fixed seed).

/// Makes texts out of `pieces`.
pub struct TextMaker<'a> {
    pieces: &'a [&'a str],
    state: u64,
}

impl<'a> TextMaker<'a> {
    pub fn new(pieces: &'a [&'a str]) -> Self {
        TextMaker {
            pieces,
            state: 0x9e37_79b9_7f4a_7c15,
        }
    }

    /// The next random number.
    pub fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// A text of fewer than `max_pieces` random pieces, each followed by what `after` adds.
    pub fn text(&mut self, max_pieces: u64, mut after: impl FnMut(u64, &mut String)) -> String {
        let mut text = String::new();
        for _ in 0..(self.state % max_pieces) {
            let random = self.next();
            text.push_str(self.pieces[(random % self.pieces.len() as u64) as usize]);
            after(random, &mut text);
        }
        text
    }
}
