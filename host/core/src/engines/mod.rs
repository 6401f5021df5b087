//! Engine resolution: turns `context.engine` into a running engine, in the design's order
//! (plugin directories beside the config and under the home, engines registered in code, then
//! the built-in compressor with a warning). A plugin that runs in child processes is started
//! by [`isolated`]; what resolution can see, as `ctxhost plugins list` shows it, is
//! [`listing`].

mod isolated;
mod listing;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxhost_compressor::Compressor;
use ctxhost_config::plugin_host::Isolation;
use ctxhost_plugin_host::PluginLibrary;
use ctxhost_plugins::shipped::SHIPPED;
use ctxhost_plugins::{
    discover, inspect, Candidate, Inspection, Loader, PluginRoot, Problem, ProblemKind,
    ReadManifest, RootKind,
};
use ctxhost_sdk::{ContextEngine, EngineError, EngineSetup, ErrorKind, HostServices, ModelInfo};

use crate::services::{HostServicesImpl, LogSink};
use crate::session::{EngineState, Parts, Resolution, Session, SessionOptions};
pub use crate::source::{EngineSource, Warning};
use crate::written::WrittenRecord;
use ctxhost_config::{Config, ConfigError, BUILT_IN_ENGINE};
use isolated::Isolated;
pub use listing::{Listing, State};

/// Builds an engine registered in code by a program that embeds the host.
pub type EngineFactory =
    Box<dyn Fn(HostServices) -> Result<Box<dyn ContextEngine>, EngineError> + Send + Sync>;

struct Registered {
    name: String,
    description: String,
    factory: EngineFactory,
}

/// The engine side of the host: configuration, services and every engine it can build.
pub struct Engines {
    config: Config,
    home: PathBuf,
    services: Arc<HostServicesImpl>,
    registered: Vec<Registered>,
    /// The `ctxhost` binary isolated engines run in (`None`: this executable).
    child_program: Option<PathBuf>,
    /// Set in an isolated engine's own process: it runs the engine in process.
    in_child: bool,
    /// The processes of each isolated plugin a session was opened on.
    pools: std::sync::Mutex<Vec<Isolated>>,
}

/// Why no session could be opened on the engine asked for.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    /// The engine refused its settings, or the config itself is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The built-in compressor could not start.
    #[error("the built-in compressor failed to start: {0}")]
    Compressor(EngineError),
    /// No engine has that name (only with [`Resolution::Strict`]).
    #[error("context engine '{name}' not found (looked in {looked_in}; no engine registered in code under that name){}{}", crate::suggest::did_you_mean(.suggestion.as_deref()), shipped_hint(.suggestion.as_deref(), .shipped.as_deref()))]
    NotFound {
        name: String,
        looked_in: String,
        /// The nearest engine name: installed, built in, registered in code, or shipped.
        suggestion: Option<String>,
        /// The engine meant (the name itself or the suggestion) when it ships with ctxhost and
        /// is not installed.
        shipped: Option<String>,
    },
    /// The engine exists but cannot run (only with [`Resolution::Strict`]).
    #[error("{}", .0.summary)]
    Unusable(Warning),
    /// A temporary state directory could not be made.
    #[error("cannot create a temporary state directory: {0}")]
    State(String),
}

/// How to get a shipped engine that is not installed, after the "did you mean" of
/// `suggestion`: in brackets when it is the engine suggested, else (the name itself was a
/// shipped engine) a clause of its own; nothing when no shipped engine is missing.
fn shipped_hint(suggestion: Option<&str>, shipped: Option<&str>) -> String {
    const INSTALL: &str = "it ships with ctxhost but is not installed: `ctxhost plugins install \
         --shipped` installs it";
    match shipped {
        Some(name) if suggestion == Some(name) => format!(" ({INSTALL})"),
        Some(_) => format!("; {INSTALL}"),
        None => String::new(),
    }
}

/// An engine that started, before it joins a session.
struct Started {
    name: String,
    source: EngineSource,
    version: String,
    engine: Box<dyn ContextEngine>,
}

impl Engines {
    pub fn new(config: Config, home: PathBuf, services: Arc<HostServicesImpl>) -> Self {
        Engines {
            config,
            home,
            services,
            registered: Vec::new(),
            child_program: None,
            in_child: false,
            pools: Default::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
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

    fn setup(&self, name: &str, config: serde_json::Value, data_root: &Path) -> EngineSetup {
        EngineSetup {
            engine: name.to_string(),
            data_dir: data_root.join(name),
            config,
            model: ModelInfo {
                name: self.config.model.name.clone(),
                context_length: self.config.model.context_length,
            },
        }
    }

    fn host_services(
        &self,
        name: &str,
        config: serde_json::Value,
        data_root: &Path,
    ) -> HostServices {
        HostServices::new(self.services.clone(), self.setup(name, config, data_root))
    }

    /// Where engines keep their state by default: `$CTXHOST_HOME/data`.
    pub fn data_root(&self) -> PathBuf {
        self.home.join("data")
    }

    /// A program embedding the host: services from `config` (token counter, the configured
    /// summarizer on `runtime`, engine log lines on stderr, `verbose` for info and debug).
    pub fn for_config(
        config: Config,
        home: PathBuf,
        runtime: tokio::runtime::Handle,
        verbose: bool,
    ) -> Result<Self, ConfigError> {
        let summarizer = ctxhost_summarizer::build(&config.summarizer, runtime)
            .map_err(|error| config.error_at(&error.key(), &error.problem()))?;
        let services = Arc::new(
            HostServicesImpl::new(
                ctxhost_tokens::TokenCounter::for_config(&config.tokens),
                LogSink::stderr(verbose),
                Some(summarizer),
            )
            .with_summarizer_cooldown(config.summarizer.cooldown()),
        );
        Ok(Engines::new(config, home, services))
    }

    /// The built-in compressor, configured from `compression.*` (its settings checked).
    pub fn compressor(&self) -> Result<Box<dyn ContextEngine>, ResolveError> {
        self.compressor_at(&self.data_root())
    }

    fn compressor_at(&self, data_root: &Path) -> Result<Box<dyn ContextEngine>, ResolveError> {
        let services =
            self.host_services(BUILT_IN_ENGINE, self.config.compression.clone(), data_root);
        match Compressor::new(services) {
            Ok(engine) => Ok(Box::new(engine)),
            Err(error) => match self.settings_error(BUILT_IN_ENGINE, &error) {
                Some(error) => Err(error.into()),
                None => Err(ResolveError::Compressor(error)),
            },
        }
    }

    /// The config section an engine's settings live in.
    fn section(name: &str) -> String {
        if name == BUILT_IN_ENGINE {
            "compression".to_string()
        } else {
            format!("plugins.{name}")
        }
    }

    /// A settings error, located in the config file; `None` for other errors.
    fn settings_error(&self, name: &str, error: &EngineError) -> Option<ConfigError> {
        settings_error(&self.config, name, error)
    }

    /// Opens a session on engine `name` (normally `context.engine`): resolves it once, starts
    /// it with the state `options` asks for, and arms the built-in compressor as its standby.
    /// Call [`Session::begin`] before using it.
    ///
    /// With [`Resolution::FallBack`], an engine that is missing or cannot start is replaced by
    /// the compressor, with a warning in [`Session::warnings`]; with [`Resolution::Strict`] it
    /// is an error. Invalid settings are always an error.
    pub fn open_session(
        &self,
        name: &str,
        options: SessionOptions,
    ) -> Result<Session, ResolveError> {
        let (data_root, state) = match options.state {
            EngineState::Persistent => (self.home.join("data"), None),
            EngineState::Temporary => {
                let dir = tempfile::Builder::new()
                    .prefix("ctxhost-state-")
                    .tempdir()
                    .map_err(|error| ResolveError::State(error.to_string()))?;
                (dir.path().to_path_buf(), Some(dir))
            }
        };
        let mut warnings = Vec::new();
        let started = match self.start(name, &data_root, options.isolation) {
            Ok(started) => started,
            Err(Failure::Settings(error)) => return Err(error.into()),
            Err(failure) if options.resolution == Resolution::Strict => {
                return Err(match failure {
                    Failure::NotFound => {
                        let (suggestion, shipped) = self.meant(name);
                        ResolveError::NotFound {
                            name: name.to_string(),
                            looked_in: self.looked_in(name),
                            suggestion,
                            shipped,
                        }
                    }
                    Failure::Other(warning) => ResolveError::Unusable(warning),
                    Failure::Settings(error) => ResolveError::Config(error),
                })
            }
            Err(failure) => {
                warnings.push(match failure {
                    Failure::NotFound => {
                        let (suggestion, shipped) = self.meant(name);
                        Warning {
                            summary: format!(
                                "context engine '{name}' not found (looked in {}; no engine registered in code under that name){}{}; using the built-in compressor",
                                self.looked_in(name),
                                crate::suggest::did_you_mean(suggestion.as_deref()),
                                shipped_hint(suggestion.as_deref(), shipped.as_deref()),
                            ),
                            detail: None,
                        }
                    }
                    Failure::Other(warning) => Warning {
                        summary: format!("{}; using the built-in compressor", warning.summary),
                        detail: warning.detail,
                    },
                    Failure::Settings(_) => unreachable!("settings errors returned above"),
                });
                Started {
                    name: BUILT_IN_ENGINE.to_string(),
                    source: EngineSource::BuiltIn,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    engine: self.compressor_at(&data_root)?,
                }
            }
        };
        let standby = match started.source {
            EngineSource::BuiltIn => None,
            _ => Some(self.compressor_at(&data_root)?),
        };
        let (model, context_length) = options.model.unwrap_or_else(|| {
            (
                self.config.model.name.clone(),
                self.config.model.context_length,
            )
        });
        // A host without session records of its own keeps which messages its engines wrote.
        let record = match options.state {
            EngineState::Persistent if options.record_written => {
                match WrittenRecord::open(&self.home, &options.id) {
                    Ok(record) => Some(record),
                    Err(error) => {
                        warnings.push(Warning {
                            summary: format!("{error}; the engine reads every message as given"),
                            detail: None,
                        });
                        None
                    }
                }
            }
            _ => None,
        };
        Ok(Session::from_parts(Parts {
            id: options.id,
            requested: name.to_string(),
            name: started.name,
            source: started.source,
            version: started.version,
            warnings,
            engine: started.engine,
            standby,
            services: self.services.clone(),
            model,
            context_length,
            state,
            record,
        }))
    }

    /// Starts engine `name`, in the design's resolution order.
    fn start(
        &self,
        name: &str,
        data_root: &Path,
        isolation: Option<Isolation>,
    ) -> Result<Started, Failure> {
        if name == BUILT_IN_ENGINE {
            return match self.compressor_at(data_root) {
                Ok(engine) => Ok(Started {
                    name: name.to_string(),
                    source: EngineSource::BuiltIn,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    engine,
                }),
                Err(ResolveError::Config(error)) => Err(Failure::Settings(error)),
                Err(error) => Err(Failure::Other(Warning {
                    summary: error.to_string(),
                    detail: None,
                })),
            };
        }
        let candidates = discover(&self.plugin_roots());
        if let Some(candidate) = candidates.iter().find(|c| c.name == name) {
            return self.start_plugin(candidate, data_root, isolation);
        }
        if let Some(registered) = self.registered.iter().find(|r| r.name == name) {
            let services = self.host_services(name, self.config.engine_section(name), data_root);
            return match (registered.factory)(services) {
                Ok(engine) => Ok(Started {
                    name: name.to_string(),
                    source: EngineSource::Registered,
                    version: String::new(),
                    engine,
                }),
                Err(error) => match self.settings_error(name, &error) {
                    Some(error) => Err(Failure::Settings(error)),
                    None => Err(Failure::Other(Warning {
                        summary: format!("engine '{name}' failed to start: {error}"),
                        detail: None,
                    })),
                },
            };
        }
        Err(Failure::NotFound)
    }

    /// Every engine name resolution knows: the compressor, plugins, engines registered in code.
    pub fn engine_names(&self) -> Vec<String> {
        let mut names = vec![BUILT_IN_ENGINE.to_string()];
        names.extend(discover(&self.plugin_roots()).into_iter().map(|c| c.name));
        names.extend(self.registered.iter().map(|r| r.name.clone()));
        names.dedup();
        names
    }

    /// The engine name closest to a mistyped `name`.
    pub fn closest_engine(&self, name: &str) -> Option<String> {
        let names = self.engine_names();
        crate::suggest::closest(name, names.iter().map(String::as_str))
    }

    /// What a name that resolved to nothing may have meant: the nearest engine name among
    /// those resolution knows and those ctxhost ships, and the shipped engine meant (the name
    /// itself or that near miss) when it is not installed.
    pub fn meant(&self, name: &str) -> (Option<String>, Option<String>) {
        let known = self.engine_names();
        let mut candidates = known.clone();
        candidates.extend(
            SHIPPED
                .iter()
                .map(|engine| engine.name.to_string())
                .filter(|shipped| !known.contains(shipped)),
        );
        let suggestion = crate::suggest::closest(name, candidates.iter().map(String::as_str));
        let meant = suggestion.as_deref().unwrap_or(name);
        let shipped = (SHIPPED.iter().any(|engine| engine.name == meant)
            && !known.iter().any(|name| name == meant))
        .then(|| meant.to_string());
        (suggestion, shipped)
    }

    /// The directories a plugin named `name` would be in, for "not found" messages.
    pub fn looked_in(&self, name: &str) -> String {
        self.plugin_roots()
            .iter()
            .map(|r| r.path.join(name).display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Loads plugin `candidate` into this process. Outside an isolated engine's own process,
    /// the library is first loaded once in a child (when this host can start one), so a
    /// library that aborts while it loads is reported instead of ending the host.
    fn load(&self, candidate: &Candidate) -> Result<PluginLibrary, Warning> {
        let probe = |candidate: &Candidate, library: &Path| self.probe_once(candidate, library);
        let probe: Option<ReadManifest> =
            (!self.in_child && self.child_program.is_some()).then_some(&probe);
        let inspection = self.inspect_with(candidate.clone(), false, Loader::InProcess { probe });
        let warning = |problem: Problem| Warning {
            summary: format!(
                "plugin '{}' ({}): {}",
                candidate.name,
                candidate.dir.display(),
                problem.summary
            ),
            detail: problem.detail,
        };
        match inspection.loaded {
            Err(problem) => Err(warning(problem)),
            Ok(_) => inspection
                .in_process
                .ok_or_else(|| warning(Problem::new(ProblemKind::LoadFailed, "not loaded".into()))),
        }
    }

    fn inspect_with(&self, candidate: Candidate, always_hash: bool, loader: Loader) -> Inspection {
        inspect(
            candidate,
            &self.config.trust,
            self.config.project_untrusted(),
            always_hash,
            loader,
        )
    }

    /// Checks that engine `name` accepts its settings in `config` (a config about to be
    /// written), without side effects: a plugin's settings are checked by its
    /// `validate_settings`, so no store is opened and no directory is made. Only settings errors
    /// are errors; an engine that cannot be loaded is not checked.
    pub fn check_settings(&self, config: &Config, name: &str) -> Result<(), ConfigError> {
        let mut checked_config = config.clone();
        // The config about to be written is the same project's: as trusted as this one.
        if let Some(why) = self.config.project_untrusted() {
            checked_config.distrust_project(why);
        }
        let engines = Engines::new(checked_config, self.home.clone(), self.services.clone());
        if name == BUILT_IN_ENGINE {
            // The compressor's constructor only reads its settings.
            return match engines.compressor() {
                Err(ResolveError::Config(error)) => Err(error),
                _ => Ok(()),
            };
        }
        let Some(candidate) = discover(&engines.plugin_roots())
            .into_iter()
            .find(|c| c.name == name)
        else {
            return Ok(());
        };
        let allowed = engines.inspect_with(candidate.clone(), false, Loader::Skip);
        if allowed.loaded.as_ref().err().map(|p| p.kind) != Some(ProblemKind::NotLoaded) {
            return Ok(());
        }
        // The engine's own code judges its settings: in a child, like any plugin code the
        // host runs only to ask something.
        let checked = match self.child_program.clone() {
            Some(program) if !self.in_child => {
                let mut engines = engines;
                engines.child_program = Some(program);
                engines.validate_in_child(name)
            }
            _ => engines.validate_for_child(name),
        };
        match checked {
            Err(error) => match settings_error(config, name, &error) {
                Some(error) => Err(error),
                None => Ok(()),
            },
            Ok(()) => Ok(()),
        }
    }

    /// Whether an engine of that name was registered in code.
    pub fn is_registered(&self, name: &str) -> bool {
        self.registered.iter().any(|r| r.name == name)
    }

    fn start_plugin(
        &self,
        candidate: &Candidate,
        data_root: &Path,
        forced: Option<Isolation>,
    ) -> Result<Started, Failure> {
        let name = candidate.name.as_str();
        let host = self.config.plugin_host_settings(name);
        let isolation = forced.or(host.isolation).unwrap_or(match candidate.root {
            RootKind::UserHome => Isolation::Process,
            RootKind::ConfigDir => Isolation::InProcess,
        });
        if isolation == Isolation::Process && !self.in_child {
            // Checked once per plugin (hashing it reads every file): its processes check again
            // each time they load the library.
            if let Some(isolated) = self.isolated(name) {
                return self.open_isolated(candidate, &isolated, data_root);
            }
            // The child loads the library; here only the approvals are checked.
            let allowed = self.inspect_with(candidate.clone(), false, Loader::Skip);
            return match allowed.loaded {
                Err(problem) if problem.kind != ProblemKind::NotLoaded => {
                    Err(Failure::Other(Warning {
                        summary: format!(
                            "plugin '{name}' ({}): {}",
                            candidate.dir.display(),
                            problem.summary
                        ),
                        detail: problem.detail,
                    }))
                }
                _ => self.start_isolated(candidate, allowed.library, data_root, &host),
            };
        }
        let library = self.load(candidate).map_err(Failure::Other)?;
        let setup = self.setup(name, self.config.engine_section(name), data_root);
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
            Ok(engine) => Ok(Started {
                name: name.to_string(),
                source: EngineSource::Plugin {
                    root: candidate.root,
                    library: library.path().to_path_buf(),
                },
                version: library.manifest().version.clone(),
                engine: Box::new(engine),
            }),
            Err(error) => Err(self.start_failure(name, &error)),
        }
    }

    /// Why plugin `name` did not start: its settings, when the engine says so, else the error.
    fn start_failure(&self, name: &str, error: &EngineError) -> Failure {
        match self.settings_error(name, error) {
            Some(error) => Failure::Settings(error),
            None => Failure::Other(Warning {
                summary: format!("plugin '{name}' failed to start: {error}"),
                detail: None,
            }),
        }
    }
}

enum Failure {
    /// The engine refused its settings: a config error, reported as such.
    Settings(ConfigError),
    /// No engine has that name.
    NotFound,
    Other(Warning),
}

/// A settings error from engine `name`, located in the config file (`config.yaml:4:
/// plugins.lcm.threshold: ...`); `None` for errors that are not about settings.
fn settings_error(config: &Config, name: &str, error: &EngineError) -> Option<ConfigError> {
    let section = Engines::section(name);
    match error.kind() {
        ErrorKind::InvalidSetting => {
            let fault = error.setting()?;
            let key = if fault.key.is_empty() {
                section
            } else {
                format!("{section}.{}", fault.key)
            };
            Some(config.error_at(&key, &fault.problem))
        }
        _ => None,
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
