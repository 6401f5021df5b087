//! Engine resolution: turns `context.engine` into a running engine, in the design's order
//! (plugin directories beside the config and under the home, engines registered in code, then
//! the built-in compressor with a warning), and lists what resolution can see.

use std::path::PathBuf;
use std::sync::Arc;

use ctxhost_compressor::Compressor;
use ctxhost_plugin_host::PluginLibrary;
use ctxhost_sdk::{ContextEngine, EngineError, EngineSetup, ErrorKind, HostServices, ModelInfo};

use crate::config::{Config, ConfigError, BUILT_IN_ENGINE};
use crate::plugins::{discover, inspect, Candidate, Inspection, PluginRoot, ProblemKind, RootKind};
use crate::services::HostServicesImpl;

/// Builds an engine registered in code by a program that embeds the host.
pub type EngineFactory =
    Box<dyn Fn(HostServices) -> Result<Box<dyn ContextEngine>, EngineError> + Send + Sync>;

struct Registered {
    name: String,
    description: String,
    factory: EngineFactory,
}

/// Where an engine came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineSource {
    BuiltIn,
    Plugin { root: RootKind, library: PathBuf },
    Registered,
}

impl EngineSource {
    pub fn label(&self) -> &'static str {
        match self {
            EngineSource::BuiltIn => "built-in",
            EngineSource::Plugin { root, .. } => root.label(),
            EngineSource::Registered => "registered in code",
        }
    }
}

/// Something the user should know about resolution: one line, plus the full text for
/// `--verbose`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub summary: String,
    pub detail: Option<String>,
}

/// A running engine and how it was found.
pub struct Resolved {
    pub engine: Box<dyn ContextEngine>,
    pub name: String,
    pub source: EngineSource,
    pub version: String,
    pub warnings: Vec<Warning>,
}

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
}

/// Where an engine stands, as `plugins list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Selected by `context.engine`, and it loads.
    Active,
    /// Usable: loads and is allowed to.
    Enabled,
    /// Installed under the user's home, not approved yet.
    Installed,
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
            Some(ProblemKind::NotEnabled) => State::Installed,
            Some(ProblemKind::Disabled) => State::Disabled,
            Some(_) => State::Broken,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Enabled => "enabled",
            State::Installed => "installed",
            State::Disabled => "disabled",
            State::Broken => "broken",
            State::Shadowed => "shadowed",
        }
    }
}

/// The engine side of the host: configuration, services and every engine it can build.
pub struct Engines {
    config: Config,
    home: PathBuf,
    services: Arc<HostServicesImpl>,
    registered: Vec<Registered>,
}

/// Why resolution could not produce any engine (the built-in compressor itself is misconfigured,
/// or the selected engine's settings are invalid).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the built-in compressor failed to start: {0}")]
    Compressor(EngineError),
}

impl Engines {
    pub fn new(config: Config, home: PathBuf, services: Arc<HostServicesImpl>) -> Self {
        Engines {
            config,
            home,
            services,
            registered: Vec::new(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// For command-line overrides (e.g. `--context-length`), before any engine is built.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    pub fn services(&self) -> &Arc<HostServicesImpl> {
        &self.services
    }

    /// Registers an engine built in code, found after plugin directories.
    pub fn register(&mut self, name: &str, description: &str, factory: EngineFactory) {
        self.registered.push(Registered {
            name: name.to_string(),
            description: description.to_string(),
            factory,
        });
    }

    /// The user's ctxhost home.
    pub fn home(&self) -> &std::path::Path {
        &self.home
    }

    /// Where `ctxhost plugins install` puts plugins: `plugins/context_engine/` under the home.
    pub fn user_plugin_root(&self) -> PluginRoot {
        let home = std::path::absolute(&self.home).unwrap_or_else(|_| self.home.clone());
        PluginRoot::new(RootKind::UserHome, &home)
    }

    /// The plugin roots, in resolution order.
    pub fn plugin_roots(&self) -> Vec<PluginRoot> {
        let mut roots = Vec::new();
        let home_root = self.user_plugin_root();
        if let Some(dir) = self.config.dir() {
            let root = PluginRoot::new(RootKind::ConfigDir, &dir);
            // A config kept in the home itself: its plugins are installed ones, which need
            // approval, not the project's own.
            if !same_dir(&root.path, &home_root.path) && !same_dir(&dir, &self.home) {
                roots.push(root);
            }
        }
        roots.push(home_root);
        roots
    }

    fn setup(&self, name: &str, config: serde_json::Value) -> EngineSetup {
        EngineSetup {
            engine: name.to_string(),
            data_dir: self.home.join("data").join(name),
            config,
            model: ModelInfo {
                name: self.config.model.name.clone(),
                context_length: self.config.model.context_length,
            },
        }
    }

    fn host_services(&self, name: &str, config: serde_json::Value) -> HostServices {
        HostServices::new(self.services.clone(), self.setup(name, config))
    }

    /// The built-in compressor, configured from `compression.*`.
    pub fn compressor(&self) -> Result<Box<dyn ContextEngine>, ResolveError> {
        let services = self.host_services(BUILT_IN_ENGINE, self.config.compression.clone());
        match Compressor::new(services) {
            Ok(engine) => Ok(Box::new(engine)),
            Err(error) if error.kind() == ErrorKind::InvalidInput => {
                Err(self.config.locate_message(error.message()).into())
            }
            Err(error) => Err(ResolveError::Compressor(error)),
        }
    }

    /// Resolves `name` (normally `context.engine`). Only invalid settings are errors: any other
    /// failure falls back to the built-in compressor with a warning.
    pub fn resolve(&self, name: &str) -> Result<Resolved, ResolveError> {
        let compressor = self.compressor()?;
        let built_in = |warnings| Resolved {
            engine: compressor,
            name: BUILT_IN_ENGINE.to_string(),
            source: EngineSource::BuiltIn,
            version: env!("CARGO_PKG_VERSION").to_string(),
            warnings,
        };
        if name == BUILT_IN_ENGINE {
            return Ok(built_in(Vec::new()));
        }
        let candidates = discover(&self.plugin_roots());
        if let Some(candidate) = candidates.iter().find(|c| c.name == name) {
            return match self.start_plugin(candidate) {
                Ok(resolved) => Ok(resolved),
                Err(Failure::Settings(error)) => Err(error.into()),
                Err(Failure::Other(warning)) => Ok(built_in(vec![Warning {
                    summary: format!("{}; using the built-in compressor", warning.summary),
                    detail: warning.detail,
                }])),
            };
        }
        if let Some(registered) = self.registered.iter().find(|r| r.name == name) {
            let services = self.host_services(name, self.config.engine_section(name));
            return match (registered.factory)(services) {
                Ok(engine) => Ok(Resolved {
                    engine,
                    name: name.to_string(),
                    source: EngineSource::Registered,
                    version: String::new(),
                    warnings: Vec::new(),
                }),
                Err(error) if error.kind() == ErrorKind::InvalidInput => {
                    Err(self.config.locate_message(error.message()).into())
                }
                Err(error) => Ok(built_in(vec![Warning {
                    summary: format!(
                        "engine '{name}' failed to start: {error}; using the built-in compressor"
                    ),
                    detail: None,
                }])),
            };
        }
        Ok(built_in(vec![Warning {
            summary: format!(
                "context engine '{name}' not found (looked in {}; no engine registered in code under that name); using the built-in compressor",
                self.looked_in(name)
            ),
            detail: None,
        }]))
    }

    /// The directories a plugin named `name` would be in, for "not found" messages.
    pub fn looked_in(&self, name: &str) -> String {
        self.plugin_roots()
            .iter()
            .map(|r| r.path.join(name).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn load(&self, candidate: &Candidate) -> Result<PluginLibrary, Warning> {
        let inspection = inspect(candidate.clone(), &self.config.trust, false);
        inspection.loaded.map_err(|problem| Warning {
            summary: format!(
                "plugin '{}' ({}): {}",
                candidate.name,
                candidate.dir.display(),
                problem.summary
            ),
            detail: problem.detail,
        })
    }

    /// Every plugin directory resolution can see, inspected under the user's approvals, in
    /// resolution order. `always_hash` computes every library's checksum.
    pub fn inspect_plugins(&self, always_hash: bool) -> Vec<Inspection> {
        discover(&self.plugin_roots())
            .into_iter()
            .map(|candidate| inspect(candidate, &self.config.trust, always_hash))
            .collect()
    }

    /// The plugin directory resolution would use for `name`, inspected.
    pub fn inspect_plugin(&self, name: &str, always_hash: bool) -> Option<Inspection> {
        discover(&self.plugin_roots())
            .into_iter()
            .find(|c| c.name == name)
            .map(|candidate| inspect(candidate, &self.config.trust, always_hash))
    }

    /// Checks that engine `name` accepts its settings in `config` (a config about to be
    /// written). Only settings errors are errors; an engine that cannot be loaded is not
    /// checked.
    pub fn check_settings(&self, config: &Config, name: &str) -> Result<(), ConfigError> {
        let engines = Engines::new(config.clone(), self.home.clone(), self.services.clone());
        if name == BUILT_IN_ENGINE {
            return match engines.compressor() {
                Err(ResolveError::Config(error)) => Err(error),
                _ => Ok(()),
            };
        }
        let Some(inspection) = engines.inspect_plugin(name, false) else {
            return Ok(());
        };
        let Ok(library) = &inspection.loaded else {
            return Ok(());
        };
        let setup = engines.setup(name, config.engine_section(name));
        match library.instantiate(self.services.clone(), setup) {
            Err(error) if error.kind() == ErrorKind::InvalidInput => {
                Err(config.locate_message(error.message()))
            }
            _ => Ok(()),
        }
    }

    /// Whether an engine of that name was registered in code.
    pub fn is_registered(&self, name: &str) -> bool {
        self.registered.iter().any(|r| r.name == name)
    }

    /// Builds plugin engine `name` from an inspected, loadable library (for `plugins info` and
    /// `doctor`, which check settings and list tools).
    pub fn instantiate(&self, inspection: &Inspection) -> Result<Box<dyn ContextEngine>, String> {
        let library = inspection.loaded.as_ref().map_err(|p| p.summary.clone())?;
        let name = inspection.candidate.name.as_str();
        let setup = self.setup(name, self.config.engine_section(name));
        std::fs::create_dir_all(&setup.data_dir).map_err(|error| {
            format!(
                "cannot create its data directory {}: {error}",
                setup.data_dir.display()
            )
        })?;
        library
            .instantiate(self.services.clone(), setup)
            .map(|engine| Box::new(engine) as Box<dyn ContextEngine>)
            .map_err(|error| match error.kind() {
                ErrorKind::InvalidInput => self.config.locate_message(error.message()).to_string(),
                _ => format!("failed to start: {error}"),
            })
    }

    fn start_plugin(&self, candidate: &Candidate) -> Result<Resolved, Failure> {
        let library = self.load(candidate).map_err(Failure::Other)?;
        let name = candidate.name.as_str();
        let setup = self.setup(name, self.config.engine_section(name));
        if let Err(error) = std::fs::create_dir_all(&setup.data_dir) {
            return Err(Failure::Other(Warning {
                summary: format!(
                    "plugin '{name}': cannot create its data directory {}: {error}",
                    setup.data_dir.display()
                ),
                detail: None,
            }));
        }
        match library.instantiate(self.services.clone(), setup) {
            Ok(engine) => Ok(Resolved {
                engine: Box::new(engine),
                name: name.to_string(),
                source: EngineSource::Plugin {
                    root: candidate.root,
                    library: library.path().to_path_buf(),
                },
                version: library.manifest().version.clone(),
                warnings: Vec::new(),
            }),
            Err(error) if error.kind() == ErrorKind::InvalidInput => Err(Failure::Settings(
                self.config.locate_message(error.message()),
            )),
            Err(error) => Err(Failure::Other(Warning {
                summary: format!("plugin '{name}' failed to start: {error}"),
                detail: None,
            })),
        }
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
                api_level: inspection
                    .loaded
                    .as_ref()
                    .ok()
                    .map(|l| l.manifest().api_level),
                description: inspection.description(),
                state: State::of(selected, problem.map(|p| p.kind)),
                problem: problem.map(|p| p.summary.clone()),
                active: selected && problem.is_none(),
                path: inspection.library.clone(),
                sha256: inspection.checksum.clone(),
                detail: problem.and_then(|p| p.detail.clone()),
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
            });
        }
        rows
    }
}

enum Failure {
    /// The engine refused its settings: a config error, reported as such.
    Settings(ConfigError),
    Other(Warning),
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
