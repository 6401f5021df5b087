//! `doctor` on SQLite: SQLite's own quick check first, then the checks both databases run
//! (`store/checks.rs`), then the full-text indexes; and repairing what can be repaired without
//! guessing.
//!
//! Repairs (`apply`) are exact or not made: a duplicate goes (its links move to the copy kept,
//! later sequence numbers close up); a deleted source link comes back only when the summary's
//! id, which hashes its sources, proves which message it was; an edited message is restored
//! only from a backup (`from_backup`) holding the text whose checksum matches; indexes are
//! rebuilt. Everything else is reported with what to do.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};

use super::sql::Lite;
use super::{codec, SqliteStore, StoreError};
use crate::checks::{self, Advice};
use crate::ids::{message_hash, summary_id};
use crate::searchable;
use crate::{Doctor, Problem, Repair};

/// What to do about what cannot be repaired here.
const ADVICE: Advice = Advice {
    repairs: true,
    restore: "restore the store from a backup",
    restore_edited:
        "restore them with doctor {\"apply\": true, \"from_backup\": \"<backup file>\"}",
};
use ctxhost_sdk::EngineError;

impl SqliteStore {
    pub fn doctor(&mut self, repair: &Repair<'_>) -> Result<Doctor, EngineError> {
        let mut found = Doctor::default();
        if let Some(why) = self.unusable() {
            found.problems.push(Problem {
                check: "open",
                count: 1,
                detail: format!(
                    "the database does not open: {why}. {}",
                    restore_advice(self.path())
                ),
            });
            return Ok(found);
        }
        if repair.apply {
            self.repair(repair, &mut found.fixed)?;
        }
        self.examine(&mut found)?;
        Ok(found)
    }

    fn examine(&self, found: &mut Doctor) -> Result<(), EngineError> {
        let advice = restore_advice(self.path());
        // On the writer, as the repairs: its checks write (FTS5's `integrity-check` commands),
        // and FTS5 checked on another connection right after a rebuild reports its index
        // malformed.
        self.with_writer(|c| {
            let lines = match quick_check(c) {
                Ok(lines) => lines,
                Err(error) => vec![error.to_string()],
            };
            if lines != ["ok"] {
                found.problems.push(Problem {
                    check: "integrity",
                    count: lines.len() as u64,
                    detail: format!("{}. {advice}", lines.join("; ")),
                });
                // Past a failed integrity check, the other checks may read garbage.
                return Ok(());
            }
            checks::examine(&mut Lite(c), &ADVICE, found)?;
            for table in FTS_TABLES {
                if let Err(why) = fts_in_sync(c, table) {
                    found.problems.push(Problem {
                        check: "fts_out_of_sync",
                        count: 1,
                        detail: format!(
                            "{table} does not match its table ({why}); run doctor with \
                             {{\"apply\": true}}"
                        ),
                    });
                }
            }
            Ok(())
        })
    }

    fn repair(&mut self, repair: &Repair<'_>, fixed: &mut Vec<String>) -> Result<(), EngineError> {
        self.with_transaction(|tx| {
            if quick_check(tx)? != ["ok"] {
                // Nothing is repaired on top of a damaged file.
                return Ok(());
            }
            if let Some(backup) = repair.from_backup {
                restore_from_backup(tx, backup, fixed)?;
            }
            remove_duplicates(tx, fixed)?;
            restore_source_links(tx, fixed)?;
            for table in FTS_TABLES {
                if fts_in_sync(tx, table).is_err() {
                    rebuild_index(tx, table)?;
                    fixed.push(format!("{table}: rebuilt"));
                }
            }
            Ok(())
        })
    }
}

const FTS_TABLES: [&str; 2] = ["lcm_messages_fts", "lcm_summaries_fts"];

fn quick_check(c: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = c.prepare("PRAGMA quick_check")?;
    let lines = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(lines)
}

/// Whether a full-text index matches its table. The summaries' index reads its text from its
/// table, so FTS5 can compare them; the messages' index keeps no text (it derives from each
/// message's JSON), so the check is that it indexes exactly the stored rows.
fn fts_in_sync(c: &Connection, table: &str) -> Result<(), StoreError> {
    if table == "lcm_messages_fts" {
        c.execute_batch(
            "INSERT INTO lcm_messages_fts(lcm_messages_fts) VALUES ('integrity-check')",
        )?;
        let (missing, extra): (u64, u64) = c.query_row(
            "SELECT \
               (SELECT count(*) FROM lcm_messages m WHERE NOT EXISTS \
                  (SELECT 1 FROM lcm_messages_fts f WHERE f.rowid = m.id)), \
               (SELECT count(*) FROM lcm_messages_fts f WHERE NOT EXISTS \
                  (SELECT 1 FROM lcm_messages m WHERE m.id = f.rowid))",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if missing + extra > 0 {
            return Err(StoreError::Corrupt(format!(
                "{missing} message(s) not indexed, {extra} indexed row(s) not stored"
            )));
        }
        return Ok(());
    }
    // rank = 1 also compares the index with the content table.
    c.execute_batch(&format!(
        "INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
    ))?;
    Ok(())
}

/// Indexes every row of the table again.
fn rebuild_index(c: &Connection, table: &str) -> Result<(), StoreError> {
    if table != "lcm_messages_fts" {
        c.execute_batch(&format!("INSERT INTO {table}({table}) VALUES ('rebuild')"))?;
        return Ok(());
    }
    c.execute_batch("INSERT INTO lcm_messages_fts(lcm_messages_fts) VALUES ('delete-all')")?;
    let mut rows = c.prepare("SELECT id, seq, json FROM lcm_messages")?;
    let mut index = c.prepare("INSERT INTO lcm_messages_fts(rowid, text) VALUES (?1, ?2)")?;
    let mut cursor = rows.query([])?;
    while let Some(row) = cursor.next()? {
        let (rowid, seq): (i64, i64) = (row.get(0)?, row.get(1)?);
        let text = searchable(&codec::decode(row.get_ref(2)?)?, seq)?;
        index.execute(params![rowid, text])?;
    }
    Ok(())
}

/// How to get a store back that this engine cannot repair.
fn restore_advice(path: &Path) -> String {
    let latest = latest_backup(path);
    let from = match &latest {
        Some(backup) => format!("the latest backup, {}", backup.display()),
        None => "your latest backup (`ctxhost engine backup` makes one)".to_string(),
    };
    format!(
        "Stop ctxhost, move {} aside (with its -wal and -shm files), and copy {from} in its \
         place; or move it aside alone to start an empty store",
        path.display()
    )
}

/// The newest file in the store's default backup directory.
fn latest_backup(path: &Path) -> Option<std::path::PathBuf> {
    let dir = path.parent()?.join(super::BACKUP_DIR);
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| Some((entry.metadata().ok()?.modified().ok()?, entry.path())))
        .max()
        .map(|(_, path)| path)
}

/// Edited messages get their text back from a backup, when the backup's matches the checksum.
fn restore_from_backup(
    c: &Connection,
    backup: &Path,
    fixed: &mut Vec<String>,
) -> Result<(), StoreError> {
    let edited = checks::edited_messages(&mut Lite(c))?;
    if edited.is_empty() {
        return Ok(());
    }
    let source = Connection::open_with_flags(backup, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| StoreError::Schema(format!("backup {}: {e}", backup.display())))?;
    // A backup taken before the tables were named `lcm_*` holds them under their old names.
    let renamed: bool = source.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE name = 'lcm_messages')",
        [],
        |r| r.get(0),
    )?;
    let table = if renamed { "lcm_messages" } else { "messages" };
    let mut lookup = source.prepare(&format!(
        "SELECT json FROM {table} WHERE conversation_id = ?1 AND seq = ?2"
    ))?;
    let mut update = c.prepare("UPDATE lcm_messages SET json = ?1 WHERE id = ?2")?;
    let mut unindex = c.prepare("DELETE FROM lcm_messages_fts WHERE rowid = ?1")?;
    let mut index = c.prepare("INSERT INTO lcm_messages_fts(rowid, text) VALUES (?1, ?2)")?;
    let mut restored = 0;
    for message in &edited {
        let original: Option<String> = lookup
            .query_row(params![message.conversation, message.seq], |r| {
                r.get_ref(0).map(Value::from)
            })
            .optional()?
            .map(|value| codec::decode(ValueRef::from(&value)))
            .transpose()?;
        let Some(json) = original.filter(|json| message_hash(json) == message.hash) else {
            continue;
        };
        // The searchable text derives from the JSON: index what came back.
        let text = searchable(&json, message.seq)?;
        update.execute(params![codec::encode(&json), message.rowid])?;
        unindex.execute([message.rowid])?;
        index.execute(params![message.rowid, text])?;
        restored += 1;
    }
    if restored > 0 {
        fixed.push(format!(
            "{restored} edited message(s) restored from {}",
            backup.display()
        ));
    }
    Ok(())
}

/// A message stored twice is the same content following the same message: the first copy
/// stays, links and followers move to it, and later sequence numbers close the gap.
fn remove_duplicates(c: &Connection, fixed: &mut Vec<String>) -> Result<(), StoreError> {
    let duplicates: Vec<(i64, i64, i64, i64)> = {
        let mut stmt = c.prepare(
            "SELECT b.id, a.id, b.conversation_id, b.seq FROM lcm_messages a JOIN lcm_messages b \
             ON b.conversation_id = a.conversation_id AND b.prev_id = a.prev_id \
             AND b.hash = a.hash AND b.head = a.head AND b.id > a.id \
             WHERE NOT EXISTS (SELECT 1 FROM lcm_messages o WHERE o.conversation_id = a.conversation_id \
               AND o.prev_id = a.prev_id AND o.hash = a.hash AND o.head = a.head AND o.id < a.id) \
             ORDER BY b.seq DESC",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        rows
    };
    for (duplicate, kept, conversation, seq) in &duplicates {
        c.execute(
            "UPDATE lcm_summary_messages SET message_id = ?2 WHERE message_id = ?1",
            params![duplicate, kept],
        )?;
        c.execute(
            "UPDATE lcm_messages SET prev_id = ?2 WHERE prev_id = ?1",
            params![duplicate, kept],
        )?;
        c.execute(
            "DELETE FROM lcm_context_items WHERE message_id = ?1",
            params![duplicate],
        )?;
        c.execute("DELETE FROM lcm_messages WHERE id = ?1", params![duplicate])?;
        // Close the gap (newest duplicates first, so earlier sequence numbers stay valid):
        // through negative numbers, so the unique (conversation, seq) never sees two at once.
        c.execute(
            "UPDATE lcm_messages SET seq = -(seq - 1) WHERE conversation_id = ?1 AND seq > ?2",
            params![conversation, seq],
        )?;
        c.execute(
            "UPDATE lcm_messages SET seq = -seq WHERE conversation_id = ?1 AND seq < 0",
            params![conversation],
        )?;
        c.execute(
            "UPDATE lcm_summaries SET seq_start = seq_start - (seq_start > ?2), \
             seq_end = seq_end - (seq_end >= ?2) WHERE conversation_id = ?1",
            params![conversation, seq],
        )?;
    }
    if !duplicates.is_empty() {
        fixed.push(format!(
            "{} duplicated message(s) removed (their links moved to the copy kept)",
            duplicates.len()
        ));
    }
    Ok(())
}

/// A leaf's deleted source link comes back when exactly one choice of message makes the
/// summary's id (a hash of its sources) come out right; likewise a condensed summary's child.
fn restore_source_links(c: &Connection, fixed: &mut Vec<String>) -> Result<(), StoreError> {
    let mut restored = 0;
    let leaves: Vec<(String, i64, i64, i64, i64)> = {
        let mut stmt = c.prepare(
            "SELECT s.id, s.conversation_id, s.seq_start, s.seq_end, s.message_count FROM lcm_summaries s \
             WHERE s.kind = 'leaf' AND s.message_count > \
             (SELECT count(*) FROM lcm_summary_messages sm WHERE sm.summary_id = s.id)",
        )?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        rows
    };
    for (id, conversation, seq_start, seq_end, count) in leaves {
        let links = links_of(
            c,
            "SELECT ord, message_id FROM lcm_summary_messages WHERE summary_id = ?1",
            &id,
        )?;
        let holes: Vec<i64> = (0..count).filter(|ord| !links.contains_key(ord)).collect();
        let [hole] = holes[..] else { continue };
        let mut stmt = c.prepare(
            "SELECT id FROM lcm_messages WHERE conversation_id = ?1 AND seq BETWEEN ?2 AND ?3 AND head = 0",
        )?;
        let candidates = stmt
            .query_map(params![conversation, seq_start, seq_end], |r| {
                r.get::<_, i64>(0)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let fits: Vec<i64> = candidates
            .into_iter()
            .filter(|candidate| {
                let sources: Vec<String> = (0..count)
                    .map(|ord| links.get(&ord).copied().unwrap_or(*candidate).to_string())
                    .collect();
                summary_id(conversation, "leaf", &sources) == id
            })
            .collect();
        if let [message] = fits[..] {
            c.execute(
                "INSERT INTO lcm_summary_messages(summary_id, ord, message_id) VALUES (?1, ?2, ?3)",
                params![id, hole, message],
            )?;
            restored += 1;
        }
    }
    let condensed: Vec<(String, i64, i64)> = {
        let mut stmt = c.prepare(
            "SELECT s.id, s.conversation_id, s.depth FROM lcm_summaries s WHERE s.kind = 'condensed' \
             AND (SELECT coalesce(max(ord) + 1, 0) FROM lcm_summary_parents p WHERE p.parent_id = s.id) \
               > (SELECT count(*) FROM lcm_summary_parents p WHERE p.parent_id = s.id)",
        )?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        rows
    };
    for (id, conversation, depth) in condensed {
        let links = links_of(
            c,
            "SELECT ord, child_id FROM lcm_summary_parents WHERE parent_id = ?1",
            &id,
        )?;
        let len = links.keys().max().map_or(0, |max| max + 1);
        let holes: Vec<i64> = (0..len).filter(|ord| !links.contains_key(ord)).collect();
        let [hole] = holes[..] else { continue };
        let mut stmt =
            c.prepare("SELECT id FROM lcm_summaries WHERE conversation_id = ?1 AND depth < ?2")?;
        let candidates = stmt
            .query_map(params![conversation, depth], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        let fits: Vec<String> = candidates
            .into_iter()
            .filter(|candidate| {
                let children: Vec<String> = (0..len)
                    .map(|ord| {
                        links
                            .get(&ord)
                            .cloned()
                            .unwrap_or_else(|| candidate.clone())
                    })
                    .collect();
                summary_id(conversation, "condensed", &children) == id
            })
            .collect();
        if let [child] = &fits[..] {
            c.execute(
                "INSERT INTO lcm_summary_parents(parent_id, ord, child_id) VALUES (?1, ?2, ?3)",
                params![id, hole, child],
            )?;
            restored += 1;
        }
    }
    if restored > 0 {
        fixed.push(format!(
            "{restored} deleted source link(s) restored (proved by the summary's id)"
        ));
    }
    Ok(())
}

fn links_of<T: rusqlite::types::FromSql>(
    c: &Connection,
    sql: &str,
    id: &str,
) -> Result<HashMap<i64, T>, StoreError> {
    let mut stmt = c.prepare(sql)?;
    let links = stmt
        .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<HashMap<_, _>, _>>()?;
    Ok(links)
}
