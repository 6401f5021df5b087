//! An engine whose effect is exactly known: each compression is one function of what it is
//! given. Harness and host tests use it to check how they score or carry a known effect.

use ctxhost_sdk::{CompressOptions, ContextEngine, EngineError, EngineStatus, Message};

/// An engine that always asks to compress and compresses with `rewrite`.
///
/// ```
/// use ctxhost_sdk::{CompressOptions, ContextEngine, Message};
/// use ctxhost_sdk_test::Rewrite;
///
/// let mut last_two = Rewrite::new("last-two", |m: &[Message]| m[m.len().saturating_sub(2)..].to_vec());
/// let chat = vec![Message::system("s"), Message::user("a"), Message::assistant("b")];
/// let out = last_two.compress(&chat, &CompressOptions::default()).unwrap();
/// assert_eq!(out, chat[1..]);
/// ```
pub struct Rewrite<F> {
    name: String,
    rewrite: F,
}

impl<F> Rewrite<F>
where
    F: FnMut(&[Message]) -> Vec<Message> + Send,
{
    /// An engine named `name` whose compression is `rewrite`.
    pub fn new(name: impl Into<String>, rewrite: F) -> Self {
        Rewrite {
            name: name.into(),
            rewrite,
        }
    }
}

impl<F> ContextEngine for Rewrite<F>
where
    F: FnMut(&[Message]) -> Vec<Message> + Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn should_compress(&mut self, _: u64) -> Result<bool, EngineError> {
        Ok(true)
    }

    fn compress(
        &mut self,
        messages: &[Message],
        _: &CompressOptions,
    ) -> Result<Vec<Message>, EngineError> {
        Ok((self.rewrite)(messages))
    }

    fn status(&mut self) -> Result<EngineStatus, EngineError> {
        Ok(EngineStatus::default())
    }
}
