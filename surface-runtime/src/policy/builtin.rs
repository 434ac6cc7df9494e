//! The built-in policies (`docs/pipeline.md`, "Built-in policies"):
//! [`authenticated`], [`has_permission`], [`tenant_boundary`] and
//! [`environment`] are authority and hide at discovery; [`rate_limit`] is
//! state and discloses. Each can be moved to another mode with
//! [`super::PolicyExt::at_discovery`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use super::{AgentPolicy, Discovery, PolicyContext, PolicyDecision, PolicyStage};
use crate::sync::{lock, MaybeSend, MaybeSync};

/// [`authenticated`]: denies when no [`super::Principal`] is set.
#[derive(Clone, Copy, Debug, Default)]
pub struct Authenticated;

/// A policy that denies unless the registry has a principal
/// (`SurfaceRegistry::set_principal(Some(…))`). Hides at discovery.
pub fn authenticated() -> Authenticated {
    Authenticated
}

impl AgentPolicy for Authenticated {
    fn name(&self) -> &str {
        "authenticated"
    }
    fn discovery(&self) -> Discovery {
        Discovery::Hide
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        match ctx.principal {
            Some(_) => PolicyDecision::Allow,
            None => PolicyDecision::deny("Sign in to use this capability."),
        }
    }
}

/// [`has_permission`]: denies unless the principal holds one permission.
#[derive(Clone, Debug)]
pub struct HasPermission {
    permission: String,
}

/// A policy that denies unless the principal holds `permission` (exact
/// name; no principal denies). Hides at discovery.
pub fn has_permission(permission: impl Into<String>) -> HasPermission {
    HasPermission {
        permission: permission.into(),
    }
}

impl AgentPolicy for HasPermission {
    fn name(&self) -> &str {
        "has-permission"
    }
    fn discovery(&self) -> Discovery {
        Discovery::Hide
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        if ctx
            .principal
            .is_some_and(|p| p.has_permission(&self.permission))
        {
            return PolicyDecision::Allow;
        }
        PolicyDecision::Deny {
            message: "You do not have the permission this capability needs.".to_string(),
            internal: Some(serde_json::json!({"permission": self.permission})),
        }
    }
}

/// [`tenant_boundary`]: denies a capability whose resource belongs to
/// another tenant than the principal's.
pub struct TenantBoundary<F> {
    resource_tenant: F,
}

/// A policy that denies when `resource_tenant` names a tenant for the
/// capability (for example from its component's instance or the route) and
/// the principal is not in it (no principal, or no tenant, denies too).
/// `None` from `resource_tenant` means the capability is not
/// tenant-scoped: allowed. Hides at discovery.
pub fn tenant_boundary<F>(resource_tenant: F) -> TenantBoundary<F>
where
    F: Fn(&PolicyContext<'_>) -> Option<String> + MaybeSend + MaybeSync,
{
    TenantBoundary { resource_tenant }
}

impl<F> AgentPolicy for TenantBoundary<F>
where
    F: Fn(&PolicyContext<'_>) -> Option<String> + MaybeSend + MaybeSync,
{
    fn name(&self) -> &str {
        "tenant-boundary"
    }
    fn discovery(&self) -> Discovery {
        Discovery::Hide
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        let Some(resource) = (self.resource_tenant)(ctx) else {
            return PolicyDecision::Allow;
        };
        let own = ctx.principal.and_then(|p| p.tenant_id.as_deref());
        if own == Some(resource.as_str()) {
            return PolicyDecision::Allow;
        }
        PolicyDecision::Deny {
            message: "This capability belongs to another tenant.".to_string(),
            internal: Some(serde_json::json!({"resourceTenant": resource})),
        }
    }
}

/// [`environment`]: denies outside a set of environments.
#[derive(Clone, Debug)]
pub struct Environment {
    allowed: Vec<String>,
}

/// A policy that denies unless the registry's environment
/// (`SurfaceRegistryBuilder::environment`) is one of `allowed` (exact
/// names; a registry without an environment denies). Hides at discovery.
pub fn environment<I, S>(allowed: I) -> Environment
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    Environment {
        allowed: allowed.into_iter().map(Into::into).collect(),
    }
}

impl AgentPolicy for Environment {
    fn name(&self) -> &str {
        "environment"
    }
    fn discovery(&self) -> Discovery {
        Discovery::Hide
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        if ctx
            .environment
            .is_some_and(|env| self.allowed.iter().any(|a| a == env))
        {
            return PolicyDecision::Allow;
        }
        PolicyDecision::Deny {
            message: "This capability is not offered in this environment.".to_string(),
            internal: Some(serde_json::json!({"environment": ctx.environment})),
        }
    }
}

/// How many (consumer, capability) pairs one [`RateLimit`] tracks. A new
/// pair beyond it first drops pairs with no call in the window, then the
/// pair whose latest call is oldest.
pub const RATE_LIMIT_MAX_KEYS: usize = 1_024;

/// [`rate_limit`]: at most `max_calls` calls per window, per consumer and
/// capability.
pub struct RateLimit {
    max_calls: usize,
    window_ms: u64,
    /// Call times (ms) in the window, oldest first, by consumer id and
    /// capability id (at most `max_calls` each).
    calls: Mutex<HashMap<(String, String), VecDeque<u64>>>,
}

/// A policy that admits at most `max_calls` calls (at least 1) in any
/// `window` (at least 1 ms), per consumer id and capability id, counting
/// the calls that reach phase 4. Beyond it a call is `RATE_LIMITED` with
/// `retryAfterMs` until the oldest counted call leaves the window. At
/// discovery it discloses: the capability is listed unavailable, "Rate
/// limit reached: …", and nothing is counted. Memory: at most
/// [`RATE_LIMIT_MAX_KEYS`] pairs of at most `max_calls` times each.
pub fn rate_limit(max_calls: usize, window: Duration) -> RateLimit {
    RateLimit {
        max_calls: max_calls.max(1),
        window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1),
        calls: Mutex::new(HashMap::new()),
    }
}

impl RateLimit {
    /// `Some(wait)` when the pair's window is full at `now`, dropping the
    /// times that left it.
    fn full(&self, times: &mut VecDeque<u64>, now: u64) -> Option<u64> {
        while times
            .front()
            .is_some_and(|t| now.saturating_sub(*t) >= self.window_ms)
        {
            times.pop_front();
        }
        (times.len() >= self.max_calls).then(|| {
            let oldest = times.front().copied().unwrap_or(now);
            oldest
                .saturating_add(self.window_ms)
                .saturating_sub(now)
                .max(1)
        })
    }

    /// Makes room for one more pair.
    fn evict(&self, calls: &mut HashMap<(String, String), VecDeque<u64>>, now: u64) {
        calls.retain(|_, times| {
            times
                .back()
                .is_some_and(|t| now.saturating_sub(*t) < self.window_ms)
        });
        if calls.len() < RATE_LIMIT_MAX_KEYS {
            return;
        }
        let oldest = calls
            .iter()
            .min_by_key(|(_, times)| times.back().copied().unwrap_or(0))
            .map(|(key, _)| key.clone());
        if let Some(key) = oldest {
            calls.remove(&key);
        }
    }
}

impl AgentPolicy for RateLimit {
    fn name(&self) -> &str {
        "rate-limit"
    }
    fn discovery(&self) -> Discovery {
        Discovery::Disclose
    }
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        let key = (ctx.consumer.id.to_string(), ctx.capability_id.to_string());
        let now = ctx.now_ms;
        let mut calls = lock(&self.calls);
        if !calls.contains_key(&key) {
            if ctx.stage == PolicyStage::Discovery {
                return PolicyDecision::Allow;
            }
            if calls.len() >= RATE_LIMIT_MAX_KEYS {
                self.evict(&mut calls, now);
            }
        }
        let times = calls.entry(key).or_default();
        if let Some(wait) = self.full(times, now) {
            let seconds = wait.div_ceil(1_000);
            return PolicyDecision::Limit {
                message: format!(
                    "Rate limit reached: at most {} call(s) every {} ms. Try again in {seconds} s.",
                    self.max_calls, self.window_ms
                ),
                retry_after_ms: wait,
            };
        }
        if ctx.stage == PolicyStage::Invocation {
            times.push_back(now);
        }
        PolicyDecision::Allow
    }
}
