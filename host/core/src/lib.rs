//! # ctxhost-core
//!
//! The host for pluggable LLM context engines: it resolves `context.engine` to the built-in
//! compressor or a cdylib plugin (found, inspected and trusted by ctxhost-plugins, run in child
//! processes by ctxhost-isolation when isolated), serves engines the host services (tokens,
//! summarizer, logs), and runs them in sessions, safely off the async runtime.
//!
//! A program embedding the host needs three things: a [`Config`], an [`Engines`] built from it
//! (engines registered in code with [`Engines::register`] join the plugins and the built-in
//! compressor), and a [`Session`] per conversation, opened with [`Engines::open_session`]. The
//! session owns the engine instance, the standby compressor, the checks on every compression and
//! the fallback; every operation is `async` and runs the engine on the blocking pool.
//!
//! An agent loop, with the engine `config.yaml` names (here the built-in compressor):
//!
//! ```
//! use std::sync::Arc;
//! use ctxhost_config::Config;
//! use ctxhost_core::{Engines, SessionOptions};
//! use ctxhost_sdk::{CompressOptions, Message, Usage};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = tokio::runtime::Runtime::new()?;
//! let home = tempfile::tempdir()?; // $CTXHOST_HOME: plugins, approvals, engine data
//! let config = Config::parse("model:\n  context_length: 8000\n", None)?;
//! let engines = Engines::for_config(config, home.path().into(), runtime.handle().clone(), false)?;
//! let mut session = engines.open_session("compressor", SessionOptions::new("chat-1"))?;
//!
//! runtime.block_on(async {
//!     session.begin().await?;
//!     let mut context = vec![Message::system("You are a helpful assistant.")];
//!     let (mut prompt_tokens, mut compressions) = (0, 0);
//!     for turn in 0..40 {
//!         context.push(Message::user(format!("Question {turn}: {}", "tell me more ".repeat(40))));
//!         // Check: compress before the call when the last call's prompt was over the threshold.
//!         if session.should_compress(prompt_tokens).await? {
//!             let compression = session
//!                 .compress(Arc::new(context.clone()), CompressOptions::default())
//!                 .await;
//!             // On failure the input comes back unchanged and the standby takes over.
//!             assert!(compression.error.is_none());
//!             context = compression.messages.to_vec();
//!             compressions += 1;
//!         }
//!         // Count: what the model would be sent (the provider's figure wins when there is one).
//!         prompt_tokens = session.count(&context);
//!         let answer = Message::assistant(format!("Answer {turn}: {}", "details ".repeat(40)));
//!         let completion_tokens = session.count_message(&answer);
//!         context.push(answer);
//!         // Record usage, as the provider reports it after each call.
//!         session
//!             .record_usage(Usage {
//!                 prompt_tokens,
//!                 completion_tokens,
//!                 total_tokens: prompt_tokens + completion_tokens,
//!                 ..Usage::default()
//!             })
//!             .await?;
//!     }
//!     assert!(compressions > 0 && session.count(&context) < 8000);
//!     // Call a tool: engines may give the agent tools of their own (the compressor has none).
//!     for schema in session.tool_schemas().await? {
//!         let name = schema["function"]["name"].as_str().unwrap_or_default().to_string();
//!         let answer = session.call_tool(name, serde_json::json!({})).await;
//!         println!("{answer:?}");
//!     }
//!     session.end(Arc::new(context)).await?;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # Ok(())
//! # }
//! ```

pub mod costing;
pub mod engines;
pub mod replay;
pub mod services;
pub mod session;
pub mod source;
pub mod suggest;
pub mod tool_set;
pub mod written;
pub use engines::Engines;
pub use session::{Session, SessionOptions};
