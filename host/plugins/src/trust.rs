//! Trust: loading a plugin library runs its code, so the user approves each plugin by a hash
//! of its whole directory (`trust.enabled.<name>` in config.yaml: every file's name and
//! content, so a library the plugin loads from its own directory cannot be swapped either) and
//! the host refuses one that changed. Plugins beside the config file belong to the user's own
//! project and load without approval once the project is trusted, unless the user approved a
//! particular build (then that build is enforced too).

use std::path::Path;

use ctxhost_config::fingerprint::{Recorded, TREE_TAG};
use ctxhost_config::TrustSection;

use crate::RootKind;

/// What the user's approvals say about one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Approved, and the plugin's directory is the one approved.
    Approved,
    /// A plugin of the user's own (trusted) project, beside the config file, with no recorded
    /// approval.
    Project,
    /// A plugin of a project the user has not trusted (`ctxhost trust`).
    UntrustedProject,
    /// Installed under the user's home but never enabled.
    NotApproved,
    /// Approved, but the plugin's directory changed since.
    Changed { approved: String, actual: String },
    /// Approved by an older ctxhost, whose approval covered only the library.
    Stale,
    /// Listed in `trust.disabled`.
    Disabled,
}

impl Approval {
    /// Whether the host may load the library.
    pub fn allows_loading(&self) -> bool {
        matches!(self, Approval::Approved | Approval::Project)
    }

    /// Decides for plugin `name` from `root`, whose directory hashes to `actual` (computed
    /// only when needed, so plugins of the project never cost a hash). `project_trusted` says
    /// whether the config's project is trusted; an untrusted project's approvals count for
    /// nothing (its config could approve anything).
    pub fn decide(
        name: &str,
        root: RootKind,
        trust: &TrustSection,
        project_trusted: bool,
        actual: impl FnOnce() -> std::io::Result<String>,
    ) -> std::io::Result<Self> {
        if trust.disabled.iter().any(|d| d == name) {
            return Ok(Approval::Disabled);
        }
        if root == RootKind::ConfigDir && !project_trusted {
            return Ok(Approval::UntrustedProject);
        }
        let recorded = trust
            .enabled
            .get(name)
            .filter(|_| project_trusted)
            .and_then(|value| Recorded::parse(value));
        match recorded {
            Some(Recorded::Tree(approved)) => {
                let actual = actual()?;
                Ok(if actual.eq_ignore_ascii_case(&approved) {
                    Approval::Approved
                } else {
                    Approval::Changed { approved, actual }
                })
            }
            Some(Recorded::LibraryOnly(_)) => Ok(Approval::Stale),
            None if root == RootKind::ConfigDir => Ok(Approval::Project),
            None => Ok(Approval::NotApproved),
        }
    }
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
    let checksum = checksum.strip_prefix(TREE_TAG).unwrap_or(checksum);
    &checksum[..checksum.len().min(12)]
}
