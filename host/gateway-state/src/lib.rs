//! What `ctxhost serve` keeps of each session, apart from serving it: the session's record
//! ([`record`]), the lineage of the client's history against the engine's view
//! ([`conversation`]), the signed references to a session's view the gateway hands agents
//! ([`reference`]), and the stores that keep records across restarts and replicas
//! ([`store`]: SQLite for one gateway, PostgreSQL for several).

pub mod conversation;
pub mod record;
pub mod reference;
pub mod store;
