//! # ctxhost-python
//!
//! The extension module `ctxhost._native` of the Python package `ctxhost`: the host's engines
//! ([`engines::Engines`]) and sessions ([`session::Session`]) as Python objects, the host's
//! errors as Python exceptions ([`errors`]), and the `ctxhost` command's own code behind the
//! package's `ctxhost` script ([`command`]). Nothing here is a second host: engines load and
//! sessions run exactly as the `ctxhost` command loads and runs them.

mod command;
mod convert;
mod engines;
mod errors;
mod session;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_native")]
fn native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_class::<engines::Engines>()?;
    module.add_class::<session::Session>()?;
    errors::add_to(module)?;
    module.add_function(wrap_pyfunction!(command::run_command, module)?)?;
    module.add_function(wrap_pyfunction!(command::embed, module)?)?;
    Ok(())
}
