//! What resolution can see, as `ctxhost plugins list` shows it: the built-in compressor, every
//! plugin directory inspected under the user's approvals, and the engines registered in code.

use std::path::{Path, PathBuf};

use ctxhost_config::BUILT_IN_ENGINE;
use ctxhost_plugins::{discover, Candidate, Inspection, Loader, ProblemKind};

use super::Engines;
use crate::source::EngineSource;

/// One row of `ctxhost plugins list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Listing {
    pub name: String,
    pub source: String,
    pub version: Option<String>,
    pub api_level: Option<u32>,
    pub description: String,
    pub state: State,
    /// Why it cannot be used, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub active: bool,
    pub path: Option<PathBuf>,
    /// The library's sha256, when the host computed it (approved or installed plugins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(skip)]
    pub detail: Option<String>,
    /// What the user should know about a plugin that loads anyway (its library loading shared
    /// libraries from outside its directory).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Where an engine stands, as `plugins list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Selected by `context.engine`, and it loads.
    Active,
    /// Usable: loads and is allowed to.
    Enabled,
    /// Installed under the user's home, not approved yet (or approved by an older version).
    Installed,
    /// A plugin of a project the user has not trusted (`ctxhost trust`).
    Untrusted,
    /// Turned off by `ctxhost plugins disable`.
    Disabled,
    /// Cannot be used; the listing says why.
    Broken,
    /// Another engine earlier in resolution order has the same name.
    Shadowed,
}

impl State {
    /// The state of an engine that is (or is not) selected and has (or has not) a problem.
    pub fn of(selected: bool, problem: Option<ProblemKind>) -> Self {
        match problem {
            None if selected => State::Active,
            None => State::Enabled,
            Some(ProblemKind::NotEnabled | ProblemKind::StaleApproval) => State::Installed,
            Some(ProblemKind::UntrustedProject) => State::Untrusted,
            Some(ProblemKind::Disabled) => State::Disabled,
            Some(_) => State::Broken,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Enabled => "enabled",
            State::Installed => "installed",
            State::Untrusted => "untrusted",
            State::Disabled => "disabled",
            State::Broken => "broken",
            State::Shadowed => "shadowed",
        }
    }
}

impl Engines {
    /// Inspects `candidate`, reading its manifest in a child process (in this process only for
    /// a program embedding the host that set no `ctxhost` binary to run children).
    fn inspect_listed(&self, candidate: Candidate, always_hash: bool) -> Inspection {
        let read =
            |candidate: &Candidate, library: &Path| self.read_manifest(&candidate.name, library);
        let loader = match self.child_program {
            Some(_) if !self.in_child => Loader::Isolated(&read),
            _ => Loader::InProcess { probe: None },
        };
        self.inspect_with(candidate, always_hash, loader)
    }

    /// Every plugin directory resolution can see, inspected under the user's approvals, in
    /// resolution order (manifests read in child processes). `always_hash` computes every
    /// plugin directory's hash.
    pub fn inspect_plugins(&self, always_hash: bool) -> Vec<Inspection> {
        discover(&self.plugin_roots())
            .into_iter()
            .map(|candidate| self.inspect_listed(candidate, always_hash))
            .collect()
    }

    /// The plugin directory resolution would use for `name`, inspected.
    pub fn inspect_plugin(&self, name: &str, always_hash: bool) -> Option<Inspection> {
        discover(&self.plugin_roots())
            .into_iter()
            .find(|c| c.name == name)
            .map(|candidate| self.inspect_listed(candidate, always_hash))
    }

    /// Everything resolution can see: the built-in compressor first, then plugins (each loaded,
    /// when the user's approvals allow, to check its ABI), then engines registered in code.
    pub fn list(&self) -> Vec<Listing> {
        let active = self.config.context.engine.as_str();
        let mut rows = vec![Listing {
            name: BUILT_IN_ENGINE.to_string(),
            source: EngineSource::BuiltIn.label().to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            api_level: Some(ctxhost_sdk::API_LEVEL),
            description: "Built-in lossy compressor: prunes old tool output and summarizes the middle of the conversation.".to_string(),
            state: State::of(active == BUILT_IN_ENGINE, None),
            problem: None,
            active: active == BUILT_IN_ENGINE,
            path: None,
            sha256: None,
            detail: None,
            warnings: Vec::new(),
        }];
        let mut seen = vec![BUILT_IN_ENGINE.to_string()];
        for inspection in self.inspect_plugins(false) {
            let name = inspection.candidate.name.clone();
            let shadowed = seen.contains(&name);
            let selected = !shadowed && active == name;
            let problem = inspection.loaded.as_ref().err();
            let mut row = Listing {
                name: name.clone(),
                source: inspection.candidate.root.label().to_string(),
                version: inspection.version(),
                api_level: inspection.loaded.as_ref().ok().map(|m| m.api_level),
                description: inspection.description(),
                state: State::of(selected, problem.map(|p| p.kind)),
                problem: problem.map(|p| p.summary.clone()),
                active: selected && problem.is_none(),
                path: inspection.library.clone(),
                sha256: inspection.checksum.clone(),
                detail: problem.and_then(|p| p.detail.clone()),
                warnings: inspection.foreign.iter().map(ToString::to_string).collect(),
            };
            if shadowed {
                row.state = State::Shadowed;
                row.problem = Some(format!(
                    "an earlier engine is also named '{name}'; this one is never used"
                ));
            }
            seen.push(name);
            rows.push(row);
        }
        for registered in &self.registered {
            let selected = active == registered.name && !seen.contains(&registered.name);
            rows.push(Listing {
                name: registered.name.clone(),
                source: EngineSource::Registered.label().to_string(),
                version: None,
                api_level: None,
                description: registered.description.clone(),
                state: State::of(selected, None),
                problem: None,
                active: selected,
                path: None,
                sha256: None,
                detail: None,
                warnings: Vec::new(),
            });
        }
        rows
    }
}
