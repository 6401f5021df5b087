//! Trust: loading a plugin library runs its code, so the user approves each library by its
//! checksum (`trust.enabled.<name>` in config.yaml) and the host refuses one that changed.
//! Plugins beside the config file belong to the user's own project and load without approval,
//! unless the user approved a particular build (then that build is enforced too).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::RootKind;
use crate::config::TrustSection;

/// What the user's approvals say about one plugin library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Approved, and the library is the one approved.
    Approved,
    /// A plugin of the user's own project (beside the config file) with no recorded approval.
    Project,
    /// Installed under the user's home but never enabled.
    NotApproved,
    /// Approved, but the library changed since.
    Changed { approved: String, actual: String },
    /// Listed in `trust.disabled`.
    Disabled,
}

impl Approval {
    /// Whether the host may load the library.
    pub fn allows_loading(&self) -> bool {
        matches!(self, Approval::Approved | Approval::Project)
    }

    /// Decides for plugin `name` from `root`, whose library has checksum `actual` (computed
    /// only when needed, so plugins of the project never cost a hash).
    pub fn decide(
        name: &str,
        root: RootKind,
        trust: &TrustSection,
        actual: impl FnOnce() -> std::io::Result<String>,
    ) -> std::io::Result<Self> {
        if trust.disabled.iter().any(|d| d == name) {
            return Ok(Approval::Disabled);
        }
        match trust.enabled.get(name) {
            Some(approved) => {
                let actual = actual()?;
                Ok(if actual.eq_ignore_ascii_case(approved) {
                    Approval::Approved
                } else {
                    Approval::Changed {
                        approved: approved.clone(),
                        actual,
                    }
                })
            }
            None if root == RootKind::ConfigDir => Ok(Approval::Project),
            None => Ok(Approval::NotApproved),
        }
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

/// A path that opens the very file `file` has open, so a library is loaded from the file that
/// was hashed even if its path is replaced in between. Where the platform has no such path, the
/// library's own path.
pub fn load_path(file: &std::fs::File, path: &Path) -> std::path::PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let by_handle = std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if by_handle.exists() {
            return by_handle;
        }
    }
    let _ = file;
    path.to_path_buf()
}

/// A checksum shortened for messages (the full one is in config.yaml and `plugins info`).
pub fn short(checksum: &str) -> &str {
    &checksum[..checksum.len().min(12)]
}
