//! Plugins in child processes ([`ctxhost_isolation`]): the pools of each isolated plugin, how a
//! child is started, a child's own side (loading the plugin it serves), and the one-off
//! questions a child answers so that a library that aborts while it loads cannot end the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxhost_config::plugin_host::HostPluginSettings;
use ctxhost_isolation::child::OpenEngine;
use ctxhost_isolation::parent::{ChildProcess, ChildSpec};
use ctxhost_isolation::pool::Pool;
use ctxhost_isolation::protocol::{Init, Loaded, Purpose};
use ctxhost_plugin_host::PluginLibrary;
use ctxhost_plugins::{discover, refused, Candidate, Problem, ProblemKind};
use ctxhost_sdk::{ContextEngine, EngineError, EngineSetup, Manifest};

use super::{Engines, Failure, Started};
use crate::source::{EngineSource, Warning};

/// An isolated plugin's processes, and the library its sessions report.
#[derive(Clone)]
pub(super) struct Isolated {
    library: PathBuf,
    pool: Arc<Pool>,
}

impl Isolated {
    /// Whether both are the same plugin run by the same program.
    fn same_plugin(&self, other: &Isolated) -> bool {
        let (mine, theirs) = (self.pool.spec(), other.pool.spec());
        mine.init.name == theirs.init.name && mine.program == theirs.program
    }
}

impl Engines {
    /// The `ctxhost` binary that runs isolated engines (`isolation: process`); by default the
    /// running executable, which a program embedding the host must set to a `ctxhost` binary
    /// to isolate engines.
    pub fn set_child_program(&mut self, program: PathBuf) {
        self.child_program = Some(program);
    }

    /// Marks these engines as an isolated engine's own process: its engine runs in process.
    pub fn as_engine_child(&mut self) {
        self.in_child = true;
    }

    /// In an isolated engine's process: loads plugin `name` once, and returns how to build an
    /// instance of its engine for each session (in process, its state under the data root
    /// given; its start-up error as the engine gave it, so a bad setting keeps its key) and
    /// the plugin's version.
    pub fn open_for_child(&self, name: &str) -> Result<(Arc<OpenEngine>, String), EngineError> {
        let library = self.load_named(name)?;
        let version = library.manifest().version.clone();
        let services = self.services.clone();
        let template = self.setup(name, self.config.engine_section(name), Path::new(""));
        let name = name.to_string();
        let open = move |data_root: &Path| -> Result<Box<dyn ContextEngine>, EngineError> {
            let setup = EngineSetup {
                data_dir: data_root.join(&name),
                ..template.clone()
            };
            std::fs::create_dir_all(&setup.data_dir).map_err(|error| {
                EngineError::failed(format!(
                    "plugin '{name}': cannot create its data directory {}: {error}",
                    setup.data_dir.display()
                ))
            })?;
            let engine = library.instantiate(services.clone(), setup)?;
            Ok(Box::new(engine))
        };
        Ok((Arc::new(open), version))
    }

    /// In an isolated engine's process: checks plugin `name`'s settings (its
    /// `validate_settings`: nothing is opened or created).
    pub fn validate_for_child(&self, name: &str) -> Result<(), EngineError> {
        let library = self.load_named(name)?;
        let setup = self.setup(name, self.config.engine_section(name), &self.data_root());
        library.validate_settings(self.services.clone(), setup)
    }

    /// Loads plugin `name` into this process, under the user's approvals.
    pub(super) fn load_named(&self, name: &str) -> Result<PluginLibrary, EngineError> {
        let candidates = discover(&self.plugin_roots());
        let candidate = candidates
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| EngineError::failed(format!("plugin '{name}' not found")))?;
        self.load(candidate)
            .map_err(|warning| EngineError::failed(warning.summary))
    }

    /// What the library at `library` declares, read by a child process that loads it: a
    /// library that aborts, crashes or hangs while loading is one problem naming the plugin.
    pub fn read_manifest(&self, name: &str, library: &Path) -> Result<Manifest, Problem> {
        match self.ask_loaded(name, library)? {
            Loaded::Manifest(manifest) => Ok(manifest),
            Loaded::Refused {
                kind,
                summary,
                detail,
            } => Err(refused(library, kind, &summary, &detail)),
        }
    }

    /// What the library at `library` (of plugin `name`) declares, or why it does not load, in
    /// one line that does not repeat the path: read in a child process like
    /// [`read_manifest`](Self::read_manifest), in this one only for a program embedding the
    /// host that set no `ctxhost` binary to run children. For a library about to be installed.
    pub fn library_manifest(&self, name: &str, library: &Path) -> Result<Manifest, String> {
        if self.child_program.is_none() || self.in_child {
            return ctxhost_plugin_host::load_library(library)
                .map(|loaded| loaded.manifest().clone())
                .map_err(|error| error.summary().to_string());
        }
        match self.ask_loaded(name, library) {
            Ok(Loaded::Manifest(manifest)) => Ok(manifest),
            Ok(Loaded::Refused { summary, .. }) => Err(summary),
            Err(problem) => Err(problem.summary),
        }
    }

    /// Loads `library` in a child process and asks what it declares.
    pub(super) fn ask_loaded(&self, name: &str, library: &Path) -> Result<Loaded, Problem> {
        let purpose = Purpose::Manifest {
            library: library.to_path_buf(),
        };
        let spec = self
            .child_spec(name, &self.data_root(), purpose)
            .map_err(|warning| Problem::new(ProblemKind::LoadFailed, warning.summary))?;
        ChildProcess::ask::<Loaded>(spec, self.services.clone(), "load")
            .map_err(|error| Problem::new(ProblemKind::LoadFailed, error.message().to_string()))
    }

    /// [`read_manifest`](Self::read_manifest), once per library per process: what loaded in a
    /// child before is not asked again.
    pub(super) fn probe_once(
        &self,
        candidate: &Candidate,
        library: &Path,
    ) -> Result<Manifest, Problem> {
        static PROBED: std::sync::Mutex<Vec<(PathBuf, Manifest)>> =
            std::sync::Mutex::new(Vec::new());
        let known = PROBED.lock().ok().and_then(|probed| {
            probed
                .iter()
                .find(|(p, _)| p == library)
                .map(|(_, m)| m.clone())
        });
        if let Some(manifest) = known {
            return Ok(manifest);
        }
        let manifest = self.read_manifest(&candidate.name, library)?;
        if let Ok(mut probed) = PROBED.lock() {
            probed.push((library.to_path_buf(), manifest.clone()));
        }
        Ok(manifest)
    }

    /// Starts plugin `candidate` in a child process (its approvals checked): a process of its
    /// pool, which later sessions share without checking again.
    pub(super) fn start_isolated(
        &self,
        candidate: &Candidate,
        library: Option<PathBuf>,
        data_root: &Path,
        host: &HostPluginSettings,
    ) -> Result<Started, Failure> {
        let name = candidate.name.as_str();
        let mut spec = self
            .child_spec(name, data_root, Purpose::Engine)
            .map_err(Failure::Other)?;
        spec.timeout = std::time::Duration::from_secs_f64(host.timeout);
        spec.check_timeout = std::time::Duration::from_secs_f64(host.check_timeout);
        let isolated = Isolated {
            library: library.unwrap_or_else(|| candidate.dir.clone()),
            pool: Pool::new(spec, self.services.clone(), host.processes),
        };
        let isolated = {
            let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            // Sessions opened at once share the first pool made.
            match pools.iter().find(|known| known.same_plugin(&isolated)) {
                Some(known) => known.clone(),
                None => {
                    pools.push(isolated.clone());
                    isolated
                }
            }
        };
        self.open_isolated(candidate, &isolated, data_root)
    }

    /// Opens a session of plugin `candidate` on `isolated`'s processes.
    pub(super) fn open_isolated(
        &self,
        candidate: &Candidate,
        isolated: &Isolated,
        data_root: &Path,
    ) -> Result<Started, Failure> {
        let name = candidate.name.as_str();
        match ChildProcess::open(&isolated.pool, data_root.to_path_buf()) {
            Ok((engine, ready)) => Ok(Started {
                name: name.to_string(),
                source: EngineSource::Plugin {
                    root: candidate.root,
                    library: isolated.library.clone(),
                },
                version: ready.version,
                engine: Box::new(engine),
            }),
            Err(error) => Err(self.start_failure(name, &error)),
        }
    }

    /// The processes plugin `name` runs in, when a session was opened on them before (by the
    /// program that runs children now).
    pub(super) fn isolated(&self, name: &str) -> Option<Isolated> {
        let program = self.child_program().ok()?;
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .iter()
            .find(|known| {
                let spec = known.pool.spec();
                spec.init.name == name && spec.program == program
            })
            .cloned()
    }

    /// The `ctxhost` binary that runs isolated engines.
    pub(super) fn child_program(&self) -> Result<PathBuf, std::io::Error> {
        match &self.child_program {
            Some(program) => Ok(program.clone()),
            None => std::env::current_exe(),
        }
    }

    /// How to start a child process for plugin `name`: this config, `purpose`, the plugin's
    /// memory limit, and (for one-off questions) a deadline of at most a minute.
    pub(super) fn child_spec(
        &self,
        name: &str,
        data_root: &Path,
        purpose: Purpose,
    ) -> Result<ChildSpec, Warning> {
        let program = self.child_program().map_err(|error| Warning {
            summary: format!(
                "plugin '{name}': cannot find the ctxhost binary to isolate it in: {error}"
            ),
            detail: None,
        })?;
        let host = self.config.plugin_host_settings(name);
        Ok(ChildSpec {
            program,
            init: Init {
                config: self.config.clone(),
                home: self.home.clone(),
                name: name.to_string(),
                data_root: data_root.to_path_buf(),
                verbose: true,
                purpose,
            },
            timeout: std::time::Duration::from_secs_f64(host.timeout.min(60.0)),
            check_timeout: std::time::Duration::from_secs_f64(host.check_timeout),
            memory_limit: (host.memory_limit_mb > 0).then(|| host.memory_limit_mb * 1024 * 1024),
            max_reply_bytes: host.max_reply_mb.saturating_mul(1024 * 1024),
        })
    }

    /// Asks a child process whether plugin `name` accepts its settings (its
    /// `validate_settings`): the plugin's own code judges them, in a child like any plugin code
    /// the host runs only to ask something.
    pub(super) fn validate_in_child(&self, name: &str) -> Result<(), EngineError> {
        let spec = self
            .child_spec(name, &self.data_root(), Purpose::ValidateSettings)
            .map_err(|warning| EngineError::failed(warning.summary))?;
        ChildProcess::ask::<serde_json::Value>(spec, self.services.clone(), "validate_settings")
            .map(drop)
    }
}
