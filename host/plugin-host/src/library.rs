//! Loading a plugin library: open it, check its interface version, layout and manifest, and
//! build engines from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::library::lib_header_from_path;
use abi_stable::std_types::RStr;
use ctxhost_sdk::abi::{EngineModuleRef, NewEngine, Purpose};
use ctxhost_sdk::{EngineError, EngineSetup, HostBackend, Manifest, API_LEVEL};

use crate::backend::export_backend;
use crate::engine::{PluginEngine, PluginObject};
use crate::load_error::{LoadError, LoadErrorKind};

/// A loaded, ABI-checked plugin library: its root module and the manifest it declared.
///
/// Libraries are never unloaded (an engine may still hold code or data from it), so never
/// overwrite a loaded library file in place. Cloning shares the loaded module.
#[derive(Clone)]
pub struct PluginLibrary {
    path: PathBuf,
    module: EngineModuleRef,
    manifest: Manifest,
}

/// Loads the library at `path` and checks its interface version, layout and manifest.
///
/// Loading runs the library's initialisers: call it only for a library the user approved.
/// Each library is loaded through its own header, so two plugins in one process never come back
/// as the same module.
pub fn load_library(path: &Path) -> Result<PluginLibrary, LoadError> {
    let header =
        lib_header_from_path(path).map_err(|error| LoadError::from_library_error(path, error))?;
    let module = header
        .init_root_module::<EngineModuleRef>()
        .map_err(|error| LoadError::from_library_error(path, error))?;
    let manifest_json = (module.manifest())();
    let manifest: Manifest = serde_json::from_str(manifest_json.as_str()).map_err(|error| {
        LoadError::new(
            LoadErrorKind::BadManifest,
            format!("the plugin's manifest is not valid: {error}"),
            manifest_json.to_string(),
        )
    })?;
    if manifest.api_level > API_LEVEL {
        return Err(LoadError::new(
            LoadErrorKind::Incompatible,
            format!(
                "needs interface level {}, this host supports up to {API_LEVEL}: upgrade ctxhost",
                manifest.api_level
            ),
            String::new(),
        ));
    }
    Ok(PluginLibrary {
        path: path.to_path_buf(),
        module,
        manifest,
    })
}

impl PluginLibrary {
    /// The path the library was loaded from, or the one given to
    /// [`reported_as`](Self::reported_as).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path to report for a library loaded through another name for the same file (the
    /// host loads a checksummed library through its open file handle, so the file it checked
    /// is the file it runs).
    pub fn reported_as(mut self, path: PathBuf) -> Self {
        self.path = path;
        self
    }

    /// What the plugin declared about itself; its `name` is the engine's name.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Builds an engine from this library, handing it the host's services. Runs the plugin's
    /// [`EnginePlugin::create`](ctxhost_sdk::EnginePlugin::create); its error comes back as is.
    pub fn instantiate(
        &self,
        backend: Arc<dyn HostBackend>,
        setup: EngineSetup,
    ) -> Result<PluginEngine, EngineError> {
        let setup_json = serde_json::to_string(&setup)?;
        let object =
            (self.module.new_engine())(RStr::from_str(&setup_json), export_backend(backend))
                .into_result()
                .map_err(EngineError::from)?;
        Ok(PluginEngine::new(
            self.manifest.name.clone(),
            PluginObject::new(object),
        ))
    }

    /// Checks `setup.config` with the plugin's
    /// [`validate_settings`](ctxhost_sdk::EnginePlugin::validate_settings): no engine is
    /// built, so nothing is opened or created.
    pub fn validate_settings(
        &self,
        backend: Arc<dyn HostBackend>,
        setup: EngineSetup,
    ) -> Result<(), EngineError> {
        let request = NewEngine {
            setup,
            purpose: Purpose::ValidateSettings,
        };
        let setup_json = serde_json::to_string(&request)?;
        (self.module.new_engine())(RStr::from_str(&setup_json), export_backend(backend))
            .into_result()
            .map(drop)
            .map_err(EngineError::from)
    }
}
