//! The `ctxhost` binary: parses the command line, runs the command, and turns errors into one
//! line on stderr and an exit code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// Exit codes: 0 success, 1 error, 2 usage error (clap), 3 the engine failed (`compress`
/// printed the conversation unchanged; `run` finished on the standby compressor).
fn main() -> ExitCode {
    let cli = Cli::parse();
    // Not for the gateway: a client that leaves mid-stream makes its next write (a `writev`,
    // which cannot ask for no signal) raise SIGPIPE, and the default disposition ended the
    // whole gateway. Parsing started no thread, so this is still the only one.
    if !matches!(cli.command, Command::Serve(_)) {
        restore_default_sigpipe();
    }
    let result = match &cli.command {
        Command::Run(args) => cli::run::run(&cli.global, args),
        Command::Compress(args) => cli::compress::run(&cli.global, args),
        Command::Quality(args) => cli::quality::run(&cli.global, args),
        Command::Tokens(args) => cli::tokens::run(&cli.global, args),
        Command::Tools(command) => cli::tools::run(&cli.global, command),
        Command::Engines(args) => cli::plugins::list(&cli.global, args),
        Command::Engine(args) => cli::engine::run(&cli.global, args),
        Command::Plugins(args) => cli::plugins::run(&cli.global, args),
        Command::Sessions(command) => cli::sessions::run(&cli.global, command),
        Command::Config(command) => cli::config::run(&cli.global, command),
        Command::Serve(args) => cli::serve::run(&cli.global, args),
        Command::Trust(args) => cli::trust::run(&cli.global, args),
        Command::EngineChild(args) => cli::engine_child::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(1)
        }
    }
}

/// Rust ignores SIGPIPE, so writing to a closed pipe (`ctxhost plugins list | head -1`) makes
/// every `println!` panic. A command-line tool should end quietly instead, as `cat` does: the
/// default disposition ends the process when its reader has gone.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called in `main` before any other thread exists; SIG_DFL is a valid disposition
    // for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
