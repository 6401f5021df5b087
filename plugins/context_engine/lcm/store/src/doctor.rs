//! What `doctor` reports, whichever database it examined.

use std::path::Path;

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub check: &'static str,
    pub count: u64,
    pub detail: String,
}

/// What `doctor` found, and did.
#[derive(Debug, Clone, Default)]
pub struct Doctor {
    pub problems: Vec<Problem>,
    /// Findings that are not faults.
    pub notes: Vec<Problem>,
    /// What `apply` repaired, one line each.
    pub fixed: Vec<String>,
}

/// What `doctor` may do.
#[derive(Debug, Clone, Default)]
pub struct Repair<'a> {
    pub apply: bool,
    /// A backup (`engine backup`) to restore edited or missing messages from.
    pub from_backup: Option<&'a Path>,
}
