//! The contract checks of ctxhost-sdk-test on the corpus. These stay on the default store
//! (not in `on_postgres`): the harness runs several engines of one config side by side on the
//! same session, which on a shared PostgreSQL store is exactly what the session lock refuses
//! (each SQLite run gets a data directory, so a store, of its own).

#[path = "common/mod.rs"]
mod common;

use common::*;
use ctxhost_engine_lcm::LcmEngine;
use ctxhost_sdk_test::{contract, corpus, ContractFailure};
use serde_json::Value;

/// The contract checks of ctxhost-sdk-test on every corpus transcript, one at a time: every
/// forced compression keeps the output contract, compressing its own output again changes
/// nothing, and a conversation under the threshold comes back as it was.
fn contract_failures(config: Value, context_length: u64) -> Vec<ContractFailure> {
    corpus::transcripts()
        .into_iter()
        .filter_map(|transcript| {
            contract::for_plugin::<LcmEngine>()
                .config(config.clone())
                .context_length(context_length)
                .conversation(&transcript.name, transcript.messages)
                .run()
                .err()
        })
        .collect()
}

/// The whole contract, the newest user message included (lcm never puts it in a leaf chunk),
/// on every transcript with the default and the small settings.
#[test]
fn the_engine_keeps_the_contract_on_every_corpus_transcript() {
    for (config, window) in [(Value::Null, 8_000), (small_config(), SMALL_WINDOW)] {
        let failures = contract_failures(config, window);
        assert!(failures.is_empty(), "{failures:#?}");
    }
}

#[test]
fn the_engine_keeps_the_whole_contract_on_the_corpus() {
    let report =
        ctxhost_sdk_test::check_plugin::<LcmEngine>().unwrap_or_else(|failure| panic!("{failure}"));
    assert!(report.shrunk > 0, "{report:?}");
    // lcm has `select_context`: every conversation's selection was checked.
    assert_eq!(report.selected, report.conversations, "{report:?}");
}
