//! `ctxhost trust [--revoke]`: trusting the project config of this directory, as `direnv
//! allow` does (see `ctxhost_config::project`).

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use ctxhost_config::home;
use ctxhost_config::project::{self, Origin, Standing, Store, Trusted};

use super::GlobalArgs;

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Take the trust back: the project's plugins and credentials are no longer used
    #[arg(long)]
    pub revoke: bool,
}

pub fn run(global: &GlobalArgs, args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let home = home::home_dir();
    let (config, origin) = super::config_path(global, &home);
    if !config.is_file() {
        bail!(
            "no project config here ({} does not exist); run `ctxhost trust` in the project's directory, or name its config with --config",
            config.display()
        );
    }
    if origin == Origin::Home {
        bail!(
            "{} is your own config in $CTXHOST_HOME; it is always trusted",
            config.display()
        );
    }
    let mut store = Store::read(&home)?;
    let key = project::key(&config);
    if args.revoke {
        if store.projects.remove(&key).is_none() {
            println!("{} was not trusted; nothing to revoke", key.display());
        } else {
            store.write(&home)?;
            println!(
                "revoked: {} is no longer trusted; its plugins do not load and its credentials are not used",
                key.display()
            );
        }
        if project::standing(&config, Origin::Project, &home)
            == Standing::Trusted(Trusted::Checkout)
        {
            println!("note: it is the checkout this ctxhost was built from, which stays trusted");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sha256 = project::record(&config, &home)?;
    println!(
        "trusted {} (sha256 {}…, with its plugins): its plugins load and its credentials are used until it changes (recorded in {})",
        key.display(),
        &sha256[..12],
        Store::path(&home).display()
    );
    Ok(ExitCode::SUCCESS)
}
