//! The usage a client sees for a request that took several model calls: every call's usage,
//! as its provider reported it, summed count by count at every depth (the details objects
//! too); fields that are not counts stand as the first call had them.

use serde_json::Value;

/// Every model call's usage of one request, in the API's own form.
#[derive(Default)]
pub struct UsageTotal {
    total: Option<Value>,
    calls: usize,
}

impl UsageTotal {
    /// Adds one call's usage (anything but an object is no report).
    pub fn add(&mut self, usage: &Value) {
        if !usage.is_object() {
            return;
        }
        self.calls += 1;
        match &mut self.total {
            Some(total) => add_counts(total, usage),
            None => self.total = Some(usage.clone()),
        }
    }

    /// The usage to report: one call's as it came, several calls' summed.
    pub fn value(&self) -> Option<Value> {
        self.total.clone()
    }

    /// The sum, once more than one call reported (a single call's usage stands in its answer).
    pub fn summed(&self) -> Option<Value> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_call_stands_as_reported() {
        let mut total = UsageTotal::default();
        total.add(&Value::Null);
        total.add(&json!({"prompt_tokens": 3, "model": "m"}));
        assert_eq!(
            total.value(),
            Some(json!({"prompt_tokens": 3, "model": "m"}))
        );
        assert_eq!(total.summed(), None);
    }

    #[test]
    fn counts_sum_at_every_depth_and_the_rest_stays_the_first() {
        let mut total = UsageTotal::default();
        total.add(
            &json!({"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10},
                          "service_tier": "a"}),
        );
        total.add(
            &json!({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 1},
                          "output_tokens": 7, "service_tier": "b"}),
        );
        let expected = json!({"input_tokens": 35, "input_tokens_details": {"cached_tokens": 11},
                              "service_tier": "a", "output_tokens": 7});
        assert_eq!(total.summed(), Some(expected.clone()));
        assert_eq!(total.value(), Some(expected));
    }
}
