//! Several nodes in one process over the in-process [`Router`]: what the tests, the benchmark
//! and the example cluster share.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

// tokio's clock, as the sleeps and timeouts below use: a paused test clock stays consistent.
use tokio::time::Instant;

use openraft::error::{ClientWriteError, RaftError};
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::{BasicNode, Config};

use crate::network::Router;
use crate::{Command, Error, NodeId, Raft, Response, TypeConfig};

/// Timing for nodes in one process: heartbeats every 50 ms, elections after 300–600 ms of
/// silence; a snapshot every `snapshot_every` applied entries, keeping `keep_logs` entries
/// behind it (so a node that was down long catches up by snapshot).
pub fn local_config(snapshot_every: u64, keep_logs: u64) -> Result<Arc<Config>, Error> {
    let config = Config {
        cluster_name: "siftdb-local".to_string(),
        heartbeat_interval: 50,
        election_timeout_min: 300,
        election_timeout_max: 600,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(snapshot_every),
        max_in_snapshot_log_to_keep: keep_logs,
        ..Config::default()
    };
    config
        .validate()
        .map(Arc::new)
        .map_err(|e| Error::Cluster(format!("bad configuration: {e}")))
}

/// Starts node `id` over `log_store` and `state_machine` and makes it reachable.
pub async fn start_node<LS, SM>(
    router: &Router<TypeConfig>,
    id: NodeId,
    config: Arc<Config>,
    log_store: LS,
    state_machine: SM,
) -> Result<Raft, Error>
where
    LS: RaftLogStorage<TypeConfig>,
    SM: RaftStateMachine<TypeConfig>,
{
    let raft = Raft::new(id, config, router.clone(), log_store, state_machine)
        .await
        .map_err(|e| Error::Cluster(format!("node {id} did not start: {e}")))?;
    router.add(id, raft.clone());
    Ok(raft)
}

/// Stops node `id`: unreachable at once, its storage released once its tasks end.
pub async fn stop_node(router: &Router<TypeConfig>, id: NodeId) -> Result<(), Error> {
    if let Some(raft) = router.remove(&id) {
        raft.shutdown()
            .await
            .map_err(|e| Error::Cluster(format!("node {id} did not stop: {e}")))?;
    }
    Ok(())
}

/// Makes `ids` one cluster, initialized through the first of them.
pub async fn initialize(router: &Router<TypeConfig>, ids: &[NodeId]) -> Result<(), Error> {
    let first = ids
        .first()
        .and_then(|id| router.get(id))
        .ok_or_else(|| Error::Cluster("no node to initialize".to_string()))?;
    let members: BTreeMap<NodeId, BasicNode> = ids
        .iter()
        .map(|id| (*id, BasicNode::new(format!("local:{id}"))))
        .collect();
    first
        .initialize(members)
        .await
        .map_err(|e| Error::Cluster(format!("initialize: {e}")))
}

/// The node that leads in the newest term any reachable node knows of, if it is reachable. (A
/// restarted node may still take itself for the leader of an older term until it hears of the
/// newer one.)
pub fn leader(router: &Router<TypeConfig>) -> Option<(NodeId, Raft)> {
    let newest = router
        .ids()
        .into_iter()
        .filter_map(|id| {
            let metrics = router.get(&id)?.metrics().borrow().clone();
            Some((metrics.current_term, metrics.current_leader?))
        })
        .max()?;
    let leader = newest.1;
    Some((leader, router.get(&leader)?))
}

/// How long one attempt of [`write`] waits for the leader's answer.
const ATTEMPT: Duration = Duration::from_secs(2);

/// Writes `command` through the leader, following redirects and waiting out elections, for at
/// most `timeout`. `Ok` means committed (by a quorum) and applied on the leader. A command
/// siftdb cannot store is refused first ([`Command::check`]). An attempt
/// that got no answer is retried, so a command may be applied twice: fine for puts and
/// deletes, not for commands whose effect depends on the state.
pub async fn write(
    router: &Router<TypeConfig>,
    command: Command,
    timeout: Duration,
) -> Result<Response, Error> {
    command.check()?;
    let deadline = Instant::now() + timeout;
    let mut last_error = "no leader".to_string();
    while Instant::now() < deadline {
        if let Some((_, raft)) = leader(router) {
            // A leader that has lost its term may not answer until it steps down: bounded, and
            // retried (a put applied twice is the same put).
            let attempt = ATTEMPT.min(deadline.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(attempt, raft.client_write(command.clone())).await {
                Ok(Ok(written)) => return Ok(written.data),
                Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                    last_error = format!("forwarded to {:?}", f.leader_id);
                }
                Ok(Err(e)) => last_error = e.to_string(),
                Err(_) => last_error = format!("no answer within {attempt:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(Error::Cluster(format!(
        "no write within {timeout:?}: {last_error}"
    )))
}

/// Waits until node `id` has applied every entry up to `index`.
pub async fn wait_applied(raft: &Raft, index: u64, timeout: Duration) -> Result<(), Error> {
    raft.wait(Some(timeout))
        .applied_index_at_least(Some(index), "catch up")
        .await
        .map(|_| ())
        .map_err(|e| Error::Cluster(format!("not applied up to {index}: {e}")))
}
