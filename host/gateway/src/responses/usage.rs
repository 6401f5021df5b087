//! Usage as the Responses API reports it (`input_tokens`, `input_tokens_details.cached_tokens`,
//! `output_tokens`, `output_tokens_details.reasoning_tokens`), for the engine and for the
//! client of a request that took several model calls.

use ctxhost_sdk::Usage;
use serde_json::Value;

/// The engine's usage: the prompt is the whole input, cached tokens part of it.
pub fn parse_usage(value: &Value) -> Option<Usage> {
    let input = value.get("input_tokens")?.as_u64()?;
    let output = value["output_tokens"].as_u64().unwrap_or(0);
    Some(Usage {
        prompt_tokens: input,
        completion_tokens: output,
        total_tokens: value["total_tokens"].as_u64().unwrap_or(input + output),
        cache_read_tokens: value["input_tokens_details"]["cached_tokens"].as_u64(),
        reasoning_tokens: value["output_tokens_details"]["reasoning_tokens"].as_u64(),
        ..Usage::default()
    })
}

/// The usage the client sees: every model call its request cost, counts summed at every
/// depth (the details objects too).
#[derive(Default)]
pub struct UsageSum {
    total: Option<Value>,
    calls: usize,
}

impl UsageSum {
    pub fn add(&mut self, value: &Value) {
        if !value.is_object() {
            return;
        }
        self.calls += 1;
        match &mut self.total {
            Some(total) => add_counts(total, value),
            None => self.total = Some(value.clone()),
        }
    }

    /// The sum, once more than one call was made (a single call's usage stands as it came).
    pub fn total(&self) -> Option<Value> {
        self.total.clone().filter(|_| self.calls > 1)
    }
}

fn add_counts(total: &mut Value, more: &Value) {
    let (Value::Object(total), Value::Object(more)) = (total, more) else {
        return;
    };
    for (key, value) in more {
        match (total.get_mut(key), value) {
            (Some(sum), Value::Number(n)) if sum.is_u64() => {
                *sum = Value::from(sum.as_u64().unwrap_or(0) + n.as_u64().unwrap_or(0));
            }
            (Some(sum), Value::Object(_)) => add_counts(sum, value),
            (None, _) => {
                total.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}
