//! An engine's tools as its sessions offer them: the schemas and their names, one copy shared
//! by every live session whose engine offers the same. A copy per session cost 26 KiB each
//! for lcm's three tools: 250 MiB of a gateway holding 10,000 sessions.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

/// The tools one engine instance offers (OpenAI function schemas), by name too.
#[derive(Debug, Default, PartialEq)]
pub struct ToolSet {
    schemas: Vec<Value>,
    names: HashSet<String>,
}

/// The sets in use, each kept while a session holds it.
static IN_USE: Mutex<Vec<Weak<ToolSet>>> = Mutex::new(Vec::new());

impl ToolSet {
    /// The set holding `schemas`: the one already in use when another session's engine offers
    /// the same, else a new one.
    pub fn shared(schemas: Vec<Value>) -> Arc<ToolSet> {
        let mut in_use = IN_USE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        in_use.retain(|set| set.strong_count() > 0);
        if let Some(set) = in_use
            .iter()
            .filter_map(Weak::upgrade)
            .find(|set| set.schemas == schemas)
        {
            return set;
        }
        let names = schemas
            .iter()
            .filter_map(|s| s["function"]["name"].as_str().map(str::to_string))
            .collect();
        let set = Arc::new(ToolSet { schemas, names });
        in_use.push(Arc::downgrade(&set));
        set
    }

    /// No tools (an engine that offers none, or whose schemas could not be read).
    pub fn none() -> Arc<ToolSet> {
        Self::shared(Vec::new())
    }

    pub fn schemas(&self) -> &[Value] {
        &self.schemas
    }

    pub fn names(&self) -> &HashSet<String> {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Value {
        json!({"type": "function", "function": {"name": name, "parameters": {}}})
    }

    #[test]
    fn sessions_offering_the_same_tools_share_one_copy_and_others_get_theirs() {
        let first = ToolSet::shared(vec![tool("grep_a"), tool("expand_a")]);
        let second = ToolSet::shared(vec![tool("grep_a"), tool("expand_a")]);
        assert!(Arc::ptr_eq(&first, &second));
        let other = ToolSet::shared(vec![tool("grep_a")]);
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(
            first.names(),
            &HashSet::from(["grep_a".to_string(), "expand_a".to_string()])
        );
        // Once no session holds a set, it leaves the sets in use.
        drop(other);
        let in_use = || {
            IN_USE
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.strong_count() > 0)
                .count()
        };
        let before = in_use();
        drop((first, second));
        assert_eq!(in_use(), before - 1);
    }
}
