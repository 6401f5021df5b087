//! `doctor` on PostgreSQL: that the database answers, the schema version, and the same
//! consistency checks as on SQLite where they mean something here (the server keeps its own
//! pages and indexes sound, and the search columns are generated, so neither SQLite's quick
//! check nor an index sync check applies). Nothing is repaired here: the answer says so.

use postgres::GenericClient;

use super::{get, schema, unsigned, PostgresStore};
use crate::store::{Doctor, Problem, Repair, StoreError};
use ctxhost_sdk::EngineError;

const FAULTS: &[(&str, &str, &str)] = &[
    (
        "duplicate_messages",
        "SELECT count(*) FROM lcm_messages a JOIN lcm_messages b \
         ON b.conversation_id = a.conversation_id AND b.prev_id = a.prev_id \
         AND b.hash = a.hash AND b.head = a.head AND b.id > a.id",
        "messages stored twice (the same content following the same message)",
    ),
    (
        "sequence_gaps",
        "SELECT coalesce(sum(mx + 1 - n), 0)::bigint FROM \
         (SELECT max(seq) AS mx, count(*) AS n FROM lcm_messages GROUP BY conversation_id) g",
        "sequence numbers missing: stored messages were deleted; restore the tables from a \
         pg_dump",
    ),
    (
        "checksum_mismatch",
        "SELECT count(*) FROM lcm_messages \
         WHERE hash <> left(encode(sha256(convert_to(json, 'UTF8')), 'hex'), 32)",
        "messages changed since they were stored; restore them from a pg_dump",
    ),
    (
        "broken_message_links",
        "SELECT count(*) FROM lcm_summary_messages sm \
         LEFT JOIN lcm_messages m ON m.id = sm.message_id WHERE m.id IS NULL",
        "leaf summaries point at messages that are not stored; restore from a pg_dump",
    ),
    (
        "missing_source_links",
        "SELECT count(*) FROM lcm_summaries s WHERE s.kind = 'leaf' AND s.message_count > \
         (SELECT count(*) FROM lcm_summary_messages sm WHERE sm.summary_id = s.id)",
        "leaf summaries lost links to their source messages",
    ),
    (
        "missing_child_links",
        "SELECT count(*) FROM lcm_summaries s WHERE s.kind = 'condensed' \
         AND (SELECT coalesce(max(ord) + 1, 0) FROM lcm_summary_parents p WHERE p.parent_id = s.id) \
           > (SELECT count(*) FROM lcm_summary_parents p WHERE p.parent_id = s.id)",
        "condensed summaries lost links to their children",
    ),
    (
        "broken_summary_links",
        "SELECT count(*) FROM lcm_summary_parents p \
         LEFT JOIN lcm_summaries a ON a.id = p.parent_id \
         LEFT JOIN lcm_summaries b ON b.id = p.child_id \
         WHERE a.id IS NULL OR b.id IS NULL",
        "condensed summaries point at summaries that are not stored",
    ),
    (
        "leaves_without_sources",
        "SELECT count(*) FROM lcm_summaries s WHERE s.kind = 'leaf' \
         AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm WHERE sm.summary_id = s.id)",
        "leaf summaries with no source messages",
    ),
    (
        "condensed_without_children",
        "SELECT count(*) FROM lcm_summaries s WHERE s.kind = 'condensed' \
         AND NOT EXISTS (SELECT 1 FROM lcm_summary_parents p WHERE p.parent_id = s.id)",
        "condensed summaries with no child summaries",
    ),
    (
        "dangling_context_items",
        "SELECT count(*) FROM lcm_context_items ci \
         LEFT JOIN lcm_messages m ON m.id = ci.message_id \
         LEFT JOIN lcm_summaries s ON s.id = ci.summary_id \
         WHERE (ci.message_id IS NOT NULL AND m.id IS NULL) \
            OR (ci.summary_id IS NOT NULL AND s.id IS NULL)",
        "context items point at rows that are not stored (the next call rebuilds the list)",
    ),
];

const NOTES: &[(&str, &str, &str)] = &[
    (
        "messages_out_of_view",
        "SELECT count(*) FROM lcm_messages m WHERE NOT m.head \
         AND NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.message_id = m.id) \
         AND NOT EXISTS (SELECT 1 FROM lcm_summary_messages sm WHERE sm.message_id = m.id)",
        "messages neither in the context nor under any summary (reachable through the tools)",
    ),
    (
        "summaries_out_of_view",
        "SELECT count(*) FROM lcm_summaries s \
         WHERE NOT EXISTS (SELECT 1 FROM lcm_context_items ci WHERE ci.summary_id = s.id) \
         AND NOT EXISTS (SELECT 1 FROM lcm_summary_parents p WHERE p.child_id = s.id)",
        "summaries neither in the context nor merged into another",
    ),
];

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
        let reached = self.read(|c| examine(c, &mut found));
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
    for (into, checks) in [(&mut found.problems, FAULTS), (&mut found.notes, NOTES)] {
        for (check, sql, detail) in checks {
            let count = unsigned(&c.query_one(*sql, &[])?, 0)?;
            if count > 0 {
                into.push(Problem {
                    check,
                    count,
                    detail: detail.to_string(),
                });
            }
        }
    }
    Ok(())
}
