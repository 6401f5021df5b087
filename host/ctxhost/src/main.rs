//! The `ctxhost` binary: the command line of [`ctxhost::main_with_args`], errors as one line on
//! stderr and an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    ctxhost::main_with_args(std::env::args_os(), None)
}
