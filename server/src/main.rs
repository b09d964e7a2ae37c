//! `siftdb-server --id N --addr HOST:PORT --dir DIR [--config FILE]`: one node of a replicated
//! key-value service (see the library's documentation and `docs/DISTRIBUTED.md`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use siftdb_server::{read_config_file, serve, NodeConfig, RaftSettings};

/// One node of a siftdb cluster: clients and peers on one HTTP port.
#[derive(Debug, Parser)]
#[command(name = "siftdb-server", version)]
struct Args {
    /// The node's id: unique in the cluster, never reused for a node whose data was lost.
    #[arg(long)]
    id: u64,
    /// The address to listen on, which peers and clients reach the node at.
    #[arg(long)]
    addr: SocketAddr,
    /// The data directory (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// A TOML file of settings (`[raft]`: heartbeat_interval_ms, election_timeout_min_ms,
    /// election_timeout_max_ms, snapshot_every, keep_logs, snapshot_chunk_bytes).
    #[arg(long)]
    config: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_logging();
    let raft = match &args.config {
        Some(path) => match read_config_file(path) {
            Ok(settings) => settings,
            Err(e) => return fail(&e),
        },
        None => RaftSettings::default(),
    };
    let config = NodeConfig {
        id: args.id,
        addr: args.addr,
        dir: args.dir,
        raft,
    };
    let prometheus = match metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()
    {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::warn!("metrics off: {e}");
            None
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&e),
    };
    match runtime.block_on(serve(config, prometheus, termination())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("siftdb-server: {e}");
    ExitCode::FAILURE
}

/// Logs to stderr; `RUST_LOG` overrides the default (this server at info, openraft at warn).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("siftdb_server=info,openraft=warn"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .init();
}

/// Completes on SIGTERM or SIGINT.
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
