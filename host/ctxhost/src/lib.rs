//! The `ctxhost` command as a library: the binary's whole `main`, callable by a program that
//! embeds the command (the Python package's `ctxhost` script runs exactly this code).

pub mod cli;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// Exit codes: 0 success, 1 error, 2 usage error (clap), 3 the engine failed (`compress`
/// printed the conversation unchanged; `run` finished on the standby compressor).
///
/// Runs the command line `args` (the program's name first, as `std::env::args_os` gives it).
/// `program` is the executable that runs this command line again: isolated engines and the
/// plugin code the host only asks something of run in a child started from it. `None` means the
/// running executable, which is right for the `ctxhost` binary; a program embedding the command
/// (an interpreter running a script) names its script instead.
pub fn main_with_args<I, T>(args: I, program: Option<PathBuf>) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        // Help and version are "errors" that print to stdout and exit 0; usage errors exit 2.
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    cli.global.program = program;
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
    // SAFETY: called before the command starts any thread of its own; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
