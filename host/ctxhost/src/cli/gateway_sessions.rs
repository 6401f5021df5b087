//! What the gateway holds of a session, for `ctxhost sessions show`: read from its state
//! (`serve.state`: the SQLite file, never created here, or the PostgreSQL database), found by
//! the session's name or by the id its engine knows it by (`name@credential`).

use ctxhost_gateway_state::record::SessionRecord;
use ctxhost_gateway_state::store::{
    default_replica_name, default_sqlite_path, PostgresStore, SessionStore, SqliteStore,
    StateLocation,
};
use serde_json::{json, Value};

use super::report::thousands;
use super::App;

/// The gateway's sessions that `id` names, most recently used first.
pub fn named(app: &App, id: &str) -> anyhow::Result<Vec<SessionRecord>> {
    let settings = &app.config().serve;
    let location = StateLocation::parse(settings.state.as_deref(), default_sqlite_path());
    // The engine's id of a gateway session is its name, `@`, and the credential's start.
    let name = id.rsplit_once('@').map_or(id, |(name, _)| name);
    let records = match &location {
        StateLocation::Sqlite(path) if !path.exists() => return Ok(Vec::new()),
        StateLocation::Sqlite(path) => app.runtime.block_on(async {
            let store = SqliteStore::open_existing(path).await?;
            let records = store.named(name).await?;
            anyhow::Ok(records)
        })?,
        StateLocation::Postgres(url) => app.runtime.block_on(async {
            let store =
                PostgresStore::connect(url, &settings.database, default_replica_name()).await?;
            let records = store.named(name).await?;
            anyhow::Ok(records)
        })?,
    };
    Ok(records
        .into_iter()
        .filter(|record| record.key.name == id || record.key.engine_session() == id)
        .collect())
}

/// One gateway session as `--json` shows it.
pub fn to_json(record: &SessionRecord) -> Value {
    let stats = &record.stats;
    let dollars = stats.cost_microdollars as f64 / 1e6;
    let no_engine = stats.no_engine_cost_microdollars as f64 / 1e6;
    json!({
        "name": record.key.name,
        "engine_session": record.key.engine_session(),
        "engine": record.engine,
        "model": record.model,
        "requests": stats.requests,
        "upstream_calls": stats.upstream_calls,
        "compressions": record.compressions.iter().filter(|c| c.error.is_none() && !c.deferred).count(),
        "tokens_sent": stats.tokens_sent,
        "cost": {
            "priced_calls": stats.priced_calls,
            "dollars": dollars,
            "no_engine_dollars": no_engine,
            "saving_dollars": no_engine - dollars,
            "saving_percent": saving_percent(dollars, no_engine),
        },
        "updated_at": record.updated_at,
    })
}

fn saving_percent(dollars: f64, no_engine: f64) -> Option<f64> {
    (no_engine > 0.0).then(|| (no_engine - dollars) / no_engine * 100.0)
}

/// One gateway session as text: what it did and what it cost.
pub fn print(record: &SessionRecord) {
    let stats = &record.stats;
    let compressions = record
        .compressions
        .iter()
        .filter(|c| c.error.is_none() && !c.deferred)
        .count();
    println!(
        "gateway      session '{}' (engine id {}): {} requests, {} model calls to {}, {} compressions with {}",
        record.key.name,
        record.key.engine_session(),
        thousands(stats.requests),
        thousands(stats.upstream_calls),
        record.model,
        compressions,
        record.engine,
    );
    if stats.priced_calls == 0 {
        println!(
            "cost         not priced: model '{}' has no price (set serve.models.{}.price)",
            record.model, record.model
        );
        return;
    }
    let dollars = stats.cost_microdollars as f64 / 1e6;
    let no_engine = stats.no_engine_cost_microdollars as f64 / 1e6;
    let saving = no_engine - dollars;
    let verdict = match saving_percent(dollars, no_engine) {
        Some(percent) if saving >= 0.0 => format!("saves ${saving:.4} ({percent:.1}%)"),
        Some(percent) => format!("COSTS ${:.4} MORE ({:+.1}%)", -saving, -percent),
        None => "no engine estimate".to_string(),
    };
    println!(
        "cost         ${dollars:.4} with {}, ${no_engine:.4} with no engine (estimated): {verdict}; {} priced calls",
        record.engine,
        thousands(stats.priced_calls),
    );
}
