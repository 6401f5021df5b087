//! `ctxhost serve`: an HTTP gateway between an agent and its model provider. The agent points
//! its base URL here; every session's context is kept under the window by the configured
//! engine, and the engine's own tools are answered for the model by the gateway.
//!
//! ```text
//! agent ──HTTP──▶ ctxhost serve ──HTTP──▶ model provider
//!                   │  per session: lineage (message digests), view, engine
//!                   └─ state store (SQLite under $CTXHOST_HOME/data/gateway/, or PostgreSQL)
//! ```
//!
//! A request locks its session, takes in the client's full history ([`conversation`]), lets the
//! engine compress through the host's [`Session`](ctxhost_core::Session) API ([`live`]), sends the
//! view plus what is new upstream ([`pipeline`], one adapter per provider API in
//! `ctxhost-gateway-wire`), and records what came back.

mod accept;
mod auth;
mod background;
mod compaction;
pub mod engine_check;
mod models;
mod pipeline;
mod proxy;
mod relay_path;
mod request_body;
mod request_log;
mod routes;
mod session;
mod turn;
mod upstream;
mod upstream_url;

use ctxhost_gateway_state::store;
use ctxhost_gateway_state::{conversation, record};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ctxhost_config::serve::GatewaySettings;
use ctxhost_gateway_wire::error::GatewayError;

use auth::GatewayTokens;
use ctxhost_core::Engines;
use ctxhost_metrics::Metrics;
use session::cache::LiveSessions;
use store::SessionStore;
use upstream::Upstream;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {reason}")]
    Listen { addr: String, reason: String },
    #[error("serve.listen `{0}` is not HOST:PORT (e.g. 127.0.0.1:8787)")]
    Address(String),
    #[error("listening on {0} (not loopback) needs gateway tokens: set serve.auth.tokens_env (or serve.auth.tokens) so only your clients can use it")]
    OpenWithoutTokens(SocketAddr),
    #[error("{what} names the environment variable {name}, which is not set")]
    MissingEnv { what: &'static str, name: String },
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    UpstreamUrl(#[from] upstream_url::UpstreamUrlError),
    #[error(transparent)]
    Engine(#[from] engine_check::EngineStartError),
    #[error(transparent)]
    StateLocked(#[from] store::StateLockError),
    #[error("cannot build the upstream client: {0}")]
    Client(String),
}

/// How to start the gateway: the settings as the command line settled them.
pub struct ServeOptions {
    pub settings: GatewaySettings,
    /// Where the session store lives.
    pub state: store::StateLocation,
    /// Log message bodies and keys (never by default).
    pub verbose: bool,
}

/// Everything a request handler reaches.
pub struct Gateway {
    pub engines: Engines,
    /// The engine every session runs (`context.engine`, unless it could not start and
    /// `serve.engine_fallback` allowed the compressor instead).
    pub engine: String,
    /// How the engine check at start-up went.
    pub engine_status: engine_check::EngineStatus,
    pub settings: GatewaySettings,
    pub store: Arc<dyn SessionStore>,
    /// With a database several gateways share: their leases and prepared compressions.
    pub coordination: Option<Arc<store::Coordination>>,
    /// This gateway's name among replicas (in leases, the turn ledger and telemetry).
    pub replica: String,
    pub upstream: Upstream,
    pub metrics: Metrics,
    pub tokens: GatewayTokens,
    pub live: LiveSessions,
    /// Models whose window is the fallback, warned about once each.
    pub guessed_windows: models::GuessedWindows,
    /// Session saves still being written after their answer went out; shutdown waits for them.
    pub saves: tokio_util::task::TaskTracker,
    /// Signs the references in the handoffs given to agents (the state's secret).
    pub signer: ctxhost_gateway_state::reference::Signer,
    /// The last sessions served on the chat wire per credential, for Hermes' compression call
    /// (it names none).
    pub served: ctxhost_agents::hermes::served::RecentSessions,
    pub verbose: bool,
    /// With a SQLite state: this gateway's claim on it, held while it serves.
    pub state_lock: Option<store::StateLock>,
}

impl Gateway {
    /// Reads a request body, refusing one over `serve.limits.max_request_bytes` with 413.
    pub async fn read_request(
        &self,
        headers: &axum::http::HeaderMap,
        body: axum::body::Body,
    ) -> Result<bytes::Bytes, GatewayError> {
        request_body::read_limited(headers, body, self.settings.limits.max_request_bytes).await
    }
}

/// A gateway bound to its address, ready to serve.
pub struct Bound {
    gateway: Arc<Gateway>,
    listener: tokio::net::TcpListener,
    /// What start-up found doubtful but not wrong, for the log once the ready lines are out.
    warnings: Vec<String>,
}

impl Bound {
    /// Binds the listen address and opens the store. Nothing is served until [`Bound::run`].
    pub async fn bind(engines: Engines, options: ServeOptions) -> Result<Self, StartError> {
        let settings = options.settings;
        let addr: SocketAddr = tokio::net::lookup_host(&settings.listen)
            .await
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| StartError::Address(settings.listen.clone()))?;
        let warnings = upstream_url::check(&settings.upstream, addr)?;
        let mut tokens: Vec<String> = settings.auth.tokens.clone();
        if let Some(name) = &settings.auth.tokens_env {
            let value = std::env::var(name).map_err(|_| StartError::MissingEnv {
                what: "serve.auth.tokens_env",
                name: name.clone(),
            })?;
            tokens.extend(value.split(',').map(str::to_string));
        }
        let tokens = GatewayTokens::new(tokens.iter().map(String::as_str));
        if !addr.ip().is_loopback() && tokens.is_empty() {
            return Err(StartError::OpenWithoutTokens(addr));
        }
        let key = match &settings.upstream_key_env {
            Some(name) => Some(std::env::var(name).map_err(|_| StartError::MissingEnv {
                what: "serve.upstream_key_env",
                name: name.clone(),
            })?),
            None => None,
        };
        let upstream =
            Upstream::new(&settings, key).map_err(|e| StartError::Client(e.to_string()))?;
        let replica = store::default_replica_name();
        let state_lock = match &options.state {
            store::StateLocation::Sqlite(path) => Some(store::StateLock::take(path)?),
            store::StateLocation::Postgres(_) => None,
        };
        let opened = options.state.open(&settings.database, &replica).await?;
        let secret = opened.store.secret().await?;
        let listener =
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|error| StartError::Listen {
                    addr: addr.to_string(),
                    reason: error.to_string(),
                })?;
        // Loading a plugin blocks; start-up has nothing else to do meanwhile.
        let engine_status = tokio::task::block_in_place(|| {
            engine_check::check(&engines, settings.engine_fallback)
        })?;
        let engine = engine_status.running().to_string();
        Ok(Bound {
            gateway: Arc::new(Gateway {
                engines,
                engine,
                engine_status,
                settings,
                store: opened.store,
                coordination: opened.coordination,
                replica,
                upstream,
                metrics: Metrics::default(),
                tokens,
                live: LiveSessions::default(),
                guessed_windows: models::GuessedWindows::default(),
                saves: tokio_util::task::TaskTracker::new(),
                signer: ctxhost_gateway_state::reference::Signer::new(secret),
                served: Default::default(),
                verbose: options.verbose,
                state_lock,
            }),
            listener,
            warnings,
        })
    }

    /// What start-up found doubtful (an upstream URL without a version segment, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The engine sessions run, and why it is not the configured one when it is not.
    pub fn engine(&self) -> &engine_check::EngineStatus {
        &self.gateway.engine_status
    }

    /// The address it listens on (the port is the real one when 0 was asked for).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves; then stops accepting, gives in-flight requests
    /// `serve.limits.shutdown_grace_seconds` to finish, waits for the session saves still being
    /// written, and returns.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), StartError> {
        let gateway = self.gateway.clone();
        let grace = Duration::from_secs_f64(gateway.settings.limits.shutdown_grace_seconds);
        let heartbeat = gateway
            .coordination
            .clone()
            .map(|c| tokio::spawn(heartbeat(c)));
        let served = self.serve(shutdown, grace).await;
        gateway.saves.close();
        gateway.saves.wait().await;
        if let Some(heartbeat) = heartbeat {
            heartbeat.abort();
        }
        served
    }

    async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
        grace: Duration,
    ) -> Result<(), StartError> {
        let router = routes::router(self.gateway.clone());
        let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: finishing requests in flight");
            let _ = stopping_tx.send(true);
        };
        let limits = &self.gateway.settings.limits;
        let caps =
            accept::ConnectionLimits::new(limits.max_connections_per_ip, limits.max_connections);
        let header_timeout = Duration::from_secs_f64(limits.header_timeout_seconds);
        let server = accept::serve(
            self.listener,
            router,
            caps,
            header_timeout,
            stopping_rx.clone(),
        );
        tokio::pin!(server);
        tokio::spawn(signal);
        let mut stopping = stopping_rx;
        tokio::select! {
            () = &mut server => return Ok(()),
            _ = stopping.wait_for(|stop| *stop) => {}
        }
        match tokio::time::timeout(grace, &mut server).await {
            Ok(()) => Ok(()),
            Err(_) => {
                tracing::warn!(
                    "requests still in flight after {}s: closing them",
                    grace.as_secs_f64()
                );
                Ok(())
            }
        }
    }
}

/// Renews this gateway's leases three times a term, so they lapse only when it stops or dies.
async fn heartbeat(coordination: Arc<store::Coordination>) {
    let mut every = tokio::time::interval(coordination.lease_duration() / 3);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Err(error) = coordination.renew_held().await {
            tracing::warn!("cannot renew this gateway's session leases: {error}");
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
