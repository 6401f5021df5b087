//! What an API with a token counting route tells the gateway's counting handler
//! (`pipeline::count`): the provider's route, and a count's shape.

use serde_json::Value;

use super::Wire;

/// An API with a token counting route.
pub trait Counting: Wire {
    /// The provider's route, after the base URL.
    const COUNT_PATH: &'static str;

    /// A count made here, in the API's shape.
    fn counted(tokens: u64) -> Value;

    /// The request's fields as a count sends them (what changes no count left out).
    fn for_count(_request: &mut Self::Request) {}

    /// The request's tool definitions, counted here with the messages.
    fn tools(request: &Self::Request) -> Option<&Value>;
}
