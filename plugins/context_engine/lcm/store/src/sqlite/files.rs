//! The SQLite store's file: a consistent copy of it (`backup`) and its size on disk.

use std::path::Path;

use super::SqliteStore;
use ctxhost_sdk::EngineError;

impl SqliteStore {
    /// A consistent copy of the whole database at `to` (which must not exist yet).
    pub fn backup(&self, to: &Path) -> Result<u64, EngineError> {
        if to.exists() {
            return Err(EngineError::invalid_input(format!(
                "backup target {} already exists; choose a new path",
                to.display()
            )));
        }
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            ctxhost_private_files::create_dir(dir).map_err(|e| {
                EngineError::failed(format!("backup: cannot create {}: {e}", dir.display()))
            })?;
        }
        // Owner-only from the start: VACUUM INTO writes into an empty file and keeps its mode.
        ctxhost_private_files::create_new_empty(to).map_err(|e| {
            EngineError::failed(format!("backup: cannot create {}: {e}", to.display()))
        })?;
        let target = to.to_string_lossy().into_owned();
        let copied = self.with_connection(|c| {
            c.execute("VACUUM INTO ?1", [&target])?;
            Ok(())
        });
        if let Err(error) = copied {
            // No half-written backup left behind to be mistaken for a good one.
            let _ = std::fs::remove_file(to);
            return Err(error);
        }
        let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
        Ok(bytes)
    }

    /// Size on disk of the database file and of its write-ahead log.
    pub fn disk_bytes(&self) -> (u64, u64) {
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let mut wal = self.path.as_os_str().to_owned();
        wal.push("-wal");
        (size(&self.path), size(Path::new(&wal)))
    }
}
