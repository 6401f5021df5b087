//! Engine resolution: turns `context.engine` into a running engine, in the design's order
//! (plugin directories beside the config and under the home, engines registered in code, then
//! the built-in compressor with a warning), and lists what resolution can see.

use std::path::PathBuf;
use std::sync::Arc;

use ctxhost_compressor::Compressor;
use ctxhost_sdk::abi::{load_library, PluginLibrary};
use ctxhost_sdk::{ContextEngine, EngineError, EngineSetup, ErrorKind, HostServices, ModelInfo};

use crate::config::{Config, ConfigError, BUILT_IN_ENGINE};
use crate::plugins::{discover, Candidate, PluginRoot, RootKind};
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
    /// `ok`, `broken` or `shadowed`.
    pub status: String,
    /// Why it cannot be used, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub active: bool,
    pub path: Option<PathBuf>,
    #[serde(skip)]
    pub detail: Option<String>,
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

    /// The plugin roots, in resolution order.
    pub fn plugin_roots(&self) -> Vec<PluginRoot> {
        let mut roots = Vec::new();
        let home = std::path::absolute(&self.home).unwrap_or_else(|_| self.home.clone());
        if let Some(dir) = self.config.dir() {
            roots.push(PluginRoot::new(RootKind::ConfigDir, &dir));
        }
        let home_root = PluginRoot::new(RootKind::UserHome, &home);
        if !roots.iter().any(|r| same_dir(&r.path, &home_root.path)) {
            roots.push(home_root);
        }
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
        let looked_in: Vec<String> = self
            .plugin_roots()
            .iter()
            .map(|r| r.path.join(name).display().to_string())
            .collect();
        Ok(built_in(vec![Warning {
            summary: format!(
                "context engine '{name}' not found (looked in {}; no engine registered in code under that name); using the built-in compressor",
                looked_in.join(", ")
            ),
            detail: None,
        }]))
    }

    fn load(&self, candidate: &Candidate) -> Result<PluginLibrary, Warning> {
        let fail = |summary: String, detail: Option<String>| Warning {
            summary: format!(
                "plugin '{}' ({}): {summary}",
                candidate.name,
                candidate.dir.display()
            ),
            detail,
        };
        let descriptor = candidate
            .descriptor
            .as_ref()
            .map_err(|error| fail(format!("bad plugin.yaml: {error}"), None))?;
        let (library, exists) = descriptor.resolve_library(&candidate.dir);
        if !exists {
            return Err(fail(
                format!(
                    "library {} not found (build the plugin, or install it with `ctxhost plugins install`)",
                    library.display()
                ),
                None,
            ));
        }
        let loaded = load_library(&library).map_err(|error| {
            fail(
                format!("{}: {}", library.display(), error.summary()),
                Some(error.detail().to_string()),
            )
        })?;
        if loaded.manifest().name != candidate.name {
            return Err(fail(
                format!(
                    "plugin.yaml names '{}' but the library is engine '{}'",
                    candidate.name,
                    loaded.manifest().name
                ),
                None,
            ));
        }
        Ok(loaded)
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

    /// Everything resolution can see: the built-in compressor first, then plugins (each loaded
    /// to check its ABI), then engines registered in code.
    pub fn list(&self) -> Vec<Listing> {
        let active = self.config.context.engine.as_str();
        let mut rows = vec![Listing {
            name: BUILT_IN_ENGINE.to_string(),
            source: EngineSource::BuiltIn.label().to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            api_level: Some(ctxhost_sdk::API_LEVEL),
            description: "Built-in lossy compressor: prunes old tool output and summarizes the middle of the conversation.".to_string(),
            status: "ok".to_string(),
            problem: None,
            active: active == BUILT_IN_ENGINE,
            path: None,
            detail: None,
        }];
        let mut seen = vec![BUILT_IN_ENGINE.to_string()];
        for candidate in discover(&self.plugin_roots()) {
            let shadowed = seen.contains(&candidate.name);
            let description = candidate
                .descriptor
                .as_ref()
                .map(|d| d.description.clone())
                .unwrap_or_default();
            let mut row = Listing {
                name: candidate.name.clone(),
                source: candidate.root.label().to_string(),
                version: None,
                api_level: None,
                description,
                status: "ok".to_string(),
                problem: None,
                active: !shadowed && active == candidate.name,
                path: candidate.library().map(|(path, _)| path),
                detail: None,
            };
            match self.load(&candidate) {
                Ok(library) => {
                    row.version = Some(library.manifest().version.clone());
                    row.api_level = Some(library.manifest().api_level);
                    if row.description.is_empty() {
                        row.description = library.manifest().description.clone();
                    }
                }
                Err(warning) => {
                    row.status = "broken".to_string();
                    row.problem = Some(strip_plugin_prefix(&warning.summary).to_string());
                    row.detail = warning.detail;
                }
            }
            if shadowed {
                row.status = "shadowed".to_string();
                row.problem = Some(format!(
                    "an earlier engine is also named '{}'; this one is never used",
                    candidate.name
                ));
            }
            seen.push(candidate.name.clone());
            rows.push(row);
        }
        for registered in &self.registered {
            rows.push(Listing {
                name: registered.name.clone(),
                source: EngineSource::Registered.label().to_string(),
                version: None,
                api_level: None,
                description: registered.description.clone(),
                status: "ok".to_string(),
                problem: None,
                active: active == registered.name && !seen.contains(&registered.name),
                path: None,
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

fn strip_plugin_prefix(summary: &str) -> &str {
    summary.split_once("): ").map_or(summary, |(_, rest)| rest)
}

fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
