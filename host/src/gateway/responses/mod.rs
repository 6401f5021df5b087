//! The Responses API's items and the engine's message model, converted both ways (the wire
//! adapter itself is [`super::wire::responses`]).

pub mod convert;
