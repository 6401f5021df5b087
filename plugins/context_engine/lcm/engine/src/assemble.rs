//! Assembly: the message list the model sees: the head, then the context list (summaries as
//! reference blocks, raw messages verbatim).

use ctxhost_sdk::{sequence, HostServices, Message};

use crate::blocks;
use crate::context::{Entry, EntryKind};

/// Builds the model's view. Compaction only ever cuts on turn boundaries, so the list is a valid
/// chat sequence; `repair` is the last line of defence for input that was already broken.
pub fn assemble(head: &[Message], entries: &[Entry], services: &HostServices) -> Vec<Message> {
    let mut out = Vec::with_capacity(head.len() + entries.len());
    out.extend_from_slice(head);
    for entry in entries {
        match &entry.kind {
            EntryKind::Message { message, .. } => out.push(message.clone()),
            EntryKind::Summary(summary) => out.push(blocks::render(summary)),
        }
    }
    if let Err(error) = sequence::validate(&out) {
        services.warn(&format!(
            "lcm: the assembled context was not a valid chat sequence ({error}); repaired"
        ));
        return sequence::repair(out);
    }
    out
}
