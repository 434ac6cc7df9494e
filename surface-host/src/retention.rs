//! Retention: what the host deletes so that stored rows are bounded by
//! age, never by traffic (docs/host.md, "Retention"). A pass
//! ([`sweep`]) expires the approvals nobody decided in time (their runs
//! are told), ends the runs older than the run age bound and revokes their
//! tokens, deletes the tokens older than that bound and the expired MCP
//! request claims, and deletes finished
//! rows older than the finished age — at most a batch per table, never a
//! row a restart or a replica still needs (a call dispatched or
//! interrupted and not reconciled, a pending approval, a decided one not
//! resumed, a route in flight, an active run). [`crate::host::Host`] runs
//! a pass every [`RetentionPolicy::interval`] on every replica (each pass
//! is idempotent; replicas racing delete each row once). The MCP server
//! deletes its idle sessions itself (twice its keep-alive).

use std::sync::Weak;
use std::time::Duration;

use surface_store::{McpStore, PruneCutoffs, Pruned};

use crate::durable::{DurableError, DurableHost, DEFAULT_APPROVAL_MAX_AGE};

/// Default [`RetentionPolicy::finished_age`]: 24 hours.
pub const DEFAULT_FINISHED_AGE: Duration = Duration::from_secs(86_400);
/// Default [`RetentionPolicy::run_max_age`]: 7 days.
pub const DEFAULT_RUN_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
/// Default [`RetentionPolicy::interval`]: one pass a minute.
pub const DEFAULT_RETENTION_INTERVAL: Duration = Duration::from_secs(60);
/// Default [`RetentionPolicy::batch`]: 1,000 rows per table per pass.
pub const DEFAULT_RETENTION_BATCH: u32 = 1_000;

/// How long the host keeps what it stored, and how often it deletes
/// (module docs). Every bound has a default; [`Self::default`] is what
/// [`crate::host::Host::builder`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    finished_age: Duration,
    run_max_age: Duration,
    approval_max_age: Duration,
    interval: Duration,
    batch: u32,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            finished_age: DEFAULT_FINISHED_AGE,
            run_max_age: DEFAULT_RUN_MAX_AGE,
            approval_max_age: DEFAULT_APPROVAL_MAX_AGE,
            interval: DEFAULT_RETENTION_INTERVAL,
            batch: DEFAULT_RETENTION_BATCH,
        }
    }
}

impl RetentionPolicy {
    /// Keeps finished rows `age` after they finished (default 24 hours):
    /// completed and reconciled calls, answered and interrupted routes,
    /// ended runs, approvals whose outcome was recorded (or withdrawn),
    /// expired surface leases. A call's invocation id is refused again
    /// only while its row is kept.
    #[must_use]
    pub fn finished_age(mut self, age: Duration) -> Self {
        self.finished_age = age;
        self
    }

    /// Ends a run `age` after it started (default 7 days) and revokes its
    /// MCP tokens; a token older than `age` is deleted even without its
    /// run.
    #[must_use]
    pub fn run_max_age(mut self, age: Duration) -> Self {
        self.run_max_age = age;
        self
    }

    /// The longest an approval waits for a decision (default 24 hours;
    /// the backend's `expiresAt` when earlier): then it expires and its
    /// run is told the call did not run.
    #[must_use]
    pub fn approval_max_age(mut self, age: Duration) -> Self {
        self.approval_max_age = age;
        self
    }

    /// Runs a pass every `interval` (default a minute; at least 10 ms).
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Deletes at most `rows` per table per pass (default 1,000; at least
    /// 1): bounds one pass's work and lock time.
    #[must_use]
    pub fn batch(mut self, rows: u32) -> Self {
        self.batch = rows.max(1);
        self
    }

    /// The approval bound, for the durable host.
    pub(crate) fn approval_age(&self) -> Duration {
        self.approval_max_age
    }
}

/// What one [`sweep`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Approvals that expired (their runs were told).
    pub expired_approvals: usize,
    /// Runs ended by the run age bound.
    pub ended_runs: usize,
    /// Tokens deleted (of those runs, and older than the bound).
    pub deleted_tokens: u64,
    /// MCP request claims deleted (expired).
    pub expired_requests: u64,
    /// Finished rows deleted, per table.
    pub pruned: Pruned,
}

/// One retention pass on `durable`'s store and `mcp`'s tokens (module
/// docs).
///
/// # Errors
/// [`DurableError::Store`] (the pass stops; the next one goes on).
pub async fn sweep(
    durable: &DurableHost,
    mcp: &dyn McpStore,
    policy: &RetentionPolicy,
) -> Result<SweepReport, DurableError> {
    let now = durable.now();
    let ago =
        |age: Duration| now.saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
    let expired_approvals = durable.expire_approvals().await?;
    let runs_before = ago(policy.run_max_age);
    let ended = durable
        .store()
        .end_runs_started_before(runs_before, now, policy.batch)
        .await?;
    let mut deleted_tokens = 0;
    for run_id in &ended {
        durable.host().end_run(run_id);
        deleted_tokens += mcp.revoke_run_tokens(run_id).await?;
    }
    deleted_tokens += mcp.delete_tokens_issued_before(runs_before).await?;
    let expired_requests = mcp.delete_expired_requests(now).await?;
    let pruned = durable
        .store()
        .prune(PruneCutoffs {
            finished_before_ms: ago(policy.finished_age),
            batch: policy.batch,
        })
        .await?;
    Ok(SweepReport {
        expired_approvals,
        ended_runs: ended.len(),
        deleted_tokens,
        expired_requests,
        pruned,
    })
}

/// Runs [`sweep`] every `policy.interval` while `durable` lives (the task
/// ends with the host); a failed pass is logged and the next one runs.
pub(crate) fn spawn(
    durable: Weak<DurableHost>,
    mcp: Weak<dyn McpStore>,
    policy: RetentionPolicy,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(policy.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let (Some(durable), Some(mcp)) = (durable.upgrade(), mcp.upgrade()) else {
                return;
            };
            match sweep(&durable, mcp.as_ref(), &policy).await {
                Ok(report) if report != SweepReport::default() => {
                    tracing::debug!(?report, "retention pass");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(error = ?error, "a retention pass failed"),
            }
        }
    })
}
