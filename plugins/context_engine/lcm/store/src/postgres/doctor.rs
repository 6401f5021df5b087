//! `doctor` on PostgreSQL: that the database answers, the schema version and `pg_trgm`, then
//! the checks both databases run (`store/checks.rs`). The server keeps its own pages and
//! indexes sound, and the search columns are generated, so neither SQLite's quick check nor an
//! index sync check applies. Nothing is repaired here: the answer says so.

use postgres::GenericClient;

use super::sql::Pg;
use super::{get, schema, PostgresStore};
use crate::checks::{self, Advice};
use crate::{Doctor, Problem, Repair, StoreError};
use ctxhost_lcm_words::SPAN_MESSAGES;
use ctxhost_sdk::EngineError;

/// What to do about what is not repaired here.
const ADVICE: Advice = Advice {
    repairs: false,
    restore: "restore the tables from a pg_dump",
    restore_edited: "restore them from a pg_dump",
};

impl PostgresStore {
    pub fn doctor(&mut self, repair: &Repair<'_>) -> Result<Doctor, EngineError> {
        let mut found = Doctor::default();
        if let Some(why) = self.unusable() {
            found.problems.push(Problem {
                check: "reachable",
                count: 1,
                detail: format!(
                    "{why}. Check that the server runs and that the URL in plugins.lcm.store \
                     names it, with a user allowed to connect"
                ),
            });
            return Ok(found);
        }
        if repair.apply || repair.from_backup.is_some() {
            found.notes.push(Problem {
                check: "repairs",
                count: 0,
                detail: "doctor repairs the SQLite store only; on PostgreSQL restore from a \
                         pg_dump of the lcm_* tables"
                    .to_string(),
            });
        }
        if let Some(why) = self.upkeep_failed() {
            found.notes.push(Problem {
                check: "index_upkeep",
                count: 1,
                detail: format!(
                    "merging the full-text index after the last large import failed ({why}); \
                     the server's autovacuum merges it later, and searches meanwhile read the \
                     words not yet merged too"
                ),
            });
        }
        let reached = self.with_client(|c| examine(c, &mut found));
        if let Err(error) = reached {
            found.problems.push(Problem {
                check: "reachable",
                count: 1,
                detail: error.message().to_string(),
            });
        }
        Ok(found)
    }
}

fn examine(c: &mut impl GenericClient, found: &mut Doctor) -> Result<(), StoreError> {
    let version = schema::version(c)?;
    if version != schema::LATEST {
        found.problems.push(Problem {
            check: "schema_version",
            count: 1,
            detail: format!(
                "the database holds lcm schema version {version}, this engine writes {}",
                schema::LATEST
            ),
        });
        return Ok(());
    }
    let trigram: bool = get(
        &c.query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')",
            &[],
        )?,
        0,
    )?;
    if !trigram {
        found.problems.push(Problem {
            check: "pg_trgm",
            count: 1,
            detail: "the pg_trgm extension is gone: substring and regex search fail; have a \
                     superuser run `CREATE EXTENSION pg_trgm`"
                .to_string(),
        });
    }
    let unspanned: i64 = get(&c.query_one(&outside_spans(), &[])?, 0)?;
    if unspanned > 0 {
        found.problems.push(Problem {
            check: "words_outside_spans",
            count: unspanned as u64,
            detail: format!(
                "messages whose words their span does not hold: search does not find them by \
                 those words; {}",
                ADVICE.restore
            ),
        });
    }
    checks::examine(&mut Pg::new(c), &ADVICE, found)?;
    Ok(())
}

/// Counts the messages whose words no span holds (`lcm_message_spans`): each must lie in a
/// span (of at most [`SPAN_MESSAGES`]) whose words include its own. One probe of the spans'
/// key per message.
fn outside_spans() -> String {
    format!(
        "SELECT count(*) FROM lcm_messages m WHERE coalesce(( \
           SELECT strip(coalesce(m.tsv, '')) || w.words = w.words \
           FROM lcm_message_spans w WHERE w.conversation_id = m.conversation_id \
             AND w.seq_start <= m.seq AND w.seq_start > m.seq - {SPAN_MESSAGES} \
             AND w.seq_end >= m.seq \
           ORDER BY w.seq_start DESC LIMIT 1), false) = false"
    )
}
