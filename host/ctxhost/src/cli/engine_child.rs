//! `ctxhost __engine-child`: the process an isolated engine runs in (hidden; the host starts
//! it). It reads the engine to start from its first input line, then serves the sessions the
//! host opens on it (see `ctxhost_isolation`).

use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use ctxhost_core::Engines;
use ctxhost_isolation::child;
use ctxhost_isolation::protocol::{Init, Loaded, Purpose, Ready, Reply, WireError, INIT_CALL};
use ctxhost_plugin_host::load_library;

#[derive(Debug, Args)]
pub struct EngineChildArgs {
    /// Address-space limit for this process, in bytes
    #[arg(long, value_name = "BYTES")]
    pub memory_limit: Option<u64>,
}

pub fn run(args: &EngineChildArgs) -> anyhow::Result<ExitCode> {
    // Before any plugin code runs: what the plugin starts dies with the host, SIGKILLed or not.
    ctxhost_isolation::spawn::die_with_host();
    if let Some(limit) = args.memory_limit {
        limit_memory(limit);
    }
    // Replies go out on what was stdout; whatever the plugin prints goes to stderr, which the
    // host relays as log lines, so it can never corrupt a reply.
    let mut replies = protocol_output()?;
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut first = String::new();
    input
        .read_line(&mut first)
        .context("reading the engine to start")?;
    let init: Init = serde_json::from_str(&first).context("the host sent no valid start line")?;
    if let Purpose::Manifest { library } = &init.purpose {
        // Only the library is needed: no config, no runtime.
        let loaded = match load_library(library) {
            Ok(library) => Loaded::Manifest(library.manifest().clone()),
            Err(error) => Loaded::Refused {
                kind: error.kind(),
                summary: error.summary().to_string(),
                detail: error.detail().to_string(),
            },
        };
        child::send(&mut replies, &Reply::Ok(serde_json::to_value(loaded)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let engines = Engines::for_config(
        init.config.clone(),
        init.home.clone(),
        runtime.handle().clone(),
        init.verbose,
    )
    .map_err(|e| ctxhost_sdk::EngineError::failed(e.to_string()))
    .map(|mut engines| {
        engines.as_engine_child();
        engines
    });
    if init.purpose == Purpose::ValidateSettings {
        let reply = match engines.and_then(|e| e.validate_for_child(&init.name)) {
            Ok(()) => Reply::Ok(serde_json::Value::Null),
            Err(error) => Reply::Err(WireError::from(&error)),
        };
        child::send(&mut replies, &reply)?;
        return Ok(ExitCode::SUCCESS);
    }
    let loaded = engines.and_then(|engines| engines.open_for_child(&init.name));
    let (open, version) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            let refused = Reply::<()>::Err(WireError::from(&error));
            replies.write_all(&child::framed(INIT_CALL, &refused))?;
            replies.flush()?;
            return Ok(ExitCode::from(1));
        }
    };
    let ready = Ready {
        name: init.name.clone(),
        version,
    };
    replies.write_all(&child::framed(INIT_CALL, &Reply::Ok(ready)))?;
    replies.flush()?;
    child::serve(open, input, child::stdin_ready, replies)?;
    // The runtime the summarizer runs on outlives every engine.
    drop(runtime);
    Ok(ExitCode::SUCCESS)
}

/// A writer on the original stdout, with fd 1 pointed at stderr from now on.
fn protocol_output() -> anyhow::Result<impl Write + Send + 'static> {
    #[cfg(unix)]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: dup/dup2 on this process's own standard descriptors; the duplicate is owned
        // by the File from here on.
        let file = unsafe {
            let copy = libc::dup(1);
            anyhow::ensure!(copy >= 0, "cannot duplicate stdout");
            anyhow::ensure!(libc::dup2(2, 1) >= 0, "cannot point stdout at stderr");
            std::fs::File::from_raw_fd(copy)
        };
        Ok(std::io::BufWriter::new(file))
    }
    #[cfg(not(unix))]
    {
        Ok(std::io::BufWriter::new(std::io::stdout()))
    }
}

fn limit_memory(bytes: u64) {
    #[cfg(unix)]
    {
        let limit = libc::rlimit {
            rlim_cur: bytes as libc::rlim_t,
            rlim_max: bytes as libc::rlim_t,
        };
        // SAFETY: setrlimit with a valid struct, on this process.
        unsafe {
            libc::setrlimit(libc::RLIMIT_AS, &limit);
        }
    }
    #[cfg(not(unix))]
    let _ = bytes;
}
