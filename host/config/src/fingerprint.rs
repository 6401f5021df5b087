//! Fingerprints of plugin directories and files: what an approval in `trust.enabled` and a
//! project's trust record hold, so a swapped file is noticed before its code runs.

use std::io::{Read, Seek};
use std::path::Path;

use sha2::{Digest, Sha256};

/// How an approval is written in `trust.enabled`: the tree hash, tagged.
pub const TREE_TAG: &str = "tree-sha256:";

/// What an approval in `trust.enabled` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The hash of the plugin's whole directory (see [`tree_sha256`]).
    Tree(String),
    /// A bare sha256 of the library alone, as older versions wrote it: it no longer
    /// approves anything, the plugin must be approved again.
    LibraryOnly(String),
}

impl Recorded {
    /// Reads a `trust.enabled` value; `None` when it is neither form.
    pub fn parse(value: &str) -> Option<Self> {
        let is_hex = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
        match value.strip_prefix(TREE_TAG) {
            Some(hash) if is_hex(hash) => Some(Recorded::Tree(hash.to_ascii_lowercase())),
            None if is_hex(value) => Some(Recorded::LibraryOnly(value.to_string())),
            _ => None,
        }
    }

    /// The value to record for a tree hash.
    pub fn value_of(tree_hash: &str) -> String {
        format!("{TREE_TAG}{tree_hash}")
    }
}

/// The hash of a plugin directory: every entry under `dir` (hidden ones included), in byte
/// order of their paths, each as its kind, its relative path and (for files) the sha256 of its
/// content; symbolic links are followed. `library`, when given, is the plugin's library held
/// open: its content is read from that handle (so the file hashed is the file loaded) and,
/// when it lies outside `dir` (a checkout's build output), it is hashed in too.
pub fn tree_sha256(
    dir: &Path,
    mut library: Option<(&Path, &mut std::fs::File)>,
) -> std::io::Result<String> {
    let mut tree = Sha256::new();
    let mut entries = Vec::new();
    collect(dir, Path::new(""), 0, &mut entries)?;
    entries.sort();
    let mut library_inside = false;
    for (relative, is_dir) in entries {
        let bytes = path_bytes(&relative);
        if is_dir {
            tree.update(b"d\0");
            tree.update(&bytes);
            tree.update(b"\0");
            continue;
        }
        let full = dir.join(&relative);
        let hash = match library.as_mut() {
            Some((path, file)) if *path == full => {
                library_inside = true;
                file.rewind()?;
                sha256_of(file)?
            }
            _ => sha256_file(&full)?,
        };
        tree.update(b"f\0");
        tree.update(&bytes);
        tree.update(b"\0");
        tree.update(hash.as_bytes());
        tree.update(b"\0");
    }
    if let (Some((path, file)), false) = (library, library_inside) {
        file.rewind()?;
        let hash = sha256_of(file)?;
        tree.update(b"x\0");
        tree.update(path_bytes(Path::new(path.file_name().unwrap_or_default())));
        tree.update(b"\0");
        tree.update(hash.as_bytes());
        tree.update(b"\0");
    }
    Ok(format!("{:x}", tree.finalize()))
}

/// How deep a plugin directory may nest (a symbolic link loop ends here, as an error).
const MAX_DEPTH: usize = 32;

fn collect(
    dir: &Path,
    relative: &Path,
    depth: usize,
    out: &mut Vec<(std::path::PathBuf, bool)>,
) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(std::io::Error::other(format!(
            "{} nests deeper than {MAX_DEPTH} directories (a symbolic link loop?)",
            dir.display()
        )));
    }
    for entry in std::fs::read_dir(dir.join(relative))? {
        let entry = entry?;
        let path = relative.join(entry.file_name());
        // Followed: what a link names is what would be loaded.
        if std::fs::metadata(entry.path())?.is_dir() {
            collect(dir, &path, depth + 1, out)?;
            out.push((path, true));
        } else {
            out.push((path, false));
        }
    }
    Ok(())
}

fn path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        path.to_string_lossy().replace('\\', "/").into_bytes()
    }
}

/// The sha256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    sha256_of(&mut std::fs::File::open(path)?)
}

/// The sha256 of everything `file` has left to read, as lowercase hex.
pub fn sha256_of(file: &mut std::fs::File) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}
