//! The built-in policies (`docs/pipeline.md`, "Built-in policies"):
//! [`authenticated`], [`has_permission`], [`tenant_boundary`] and
//! [`environment`] are authority and hide at discovery; [`rate_limit`] is
//! state and discloses. Each can be moved to another mode with
//! [`super::PolicyExt::at_discovery`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use super::{AgentPolicy, Discovery, PolicyContext, PolicyDecision};
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
    /// `has-permission(<permission>)`.
    name: String,
}

/// A policy that denies unless the principal holds `permission` (exact
/// name; no principal denies). Hides at discovery. Its name (in audit
/// records and the surface contract) is `has-permission(<permission>)`.
pub fn has_permission(permission: impl Into<String>) -> HasPermission {
    let permission = permission.into();
    HasPermission {
        name: format!("has-permission({permission})"),
        permission,
    }
}

impl AgentPolicy for HasPermission {
    fn name(&self) -> &str {
        &self.name
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
    /// `environment(<allowed>, …)`.
    name: String,
}

/// A policy that denies unless the registry's environment
/// (`SurfaceRegistryBuilder::environment`) is one of `allowed` (exact
/// names; a registry without an environment denies). Hides at discovery.
/// Its name is `environment(<allowed>, …)`.
pub fn environment<I, S>(allowed: I) -> Environment
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let allowed: Vec<String> = allowed.into_iter().map(Into::into).collect();
    Environment {
        name: format!("environment({})", allowed.join(", ")),
        allowed,
    }
}

impl AgentPolicy for Environment {
    fn name(&self) -> &str {
        &self.name
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
    /// `rate-limit(N per W ms)`.
    name: String,
    max_calls: usize,
    window_ms: u64,
    /// Call times (ms) in the window, oldest first, by consumer id and
    /// capability id (at most `max_calls` each).
    calls: Mutex<HashMap<(String, String), VecDeque<u64>>>,
}

/// A policy that admits at most `max_calls` calls (at least 1) in any
/// `window` (at least 1 ms), per consumer id and capability id, counting
/// the calls that execute (`AgentPolicy::executing`: a call only asked for
/// a confirmation, or refused, is not counted; calls in flight at once may
/// pass together). Its name is `rate-limit(N per W ms)`. Beyond it a call
/// is `RATE_LIMITED` at phase 4 with
/// `retryAfterMs` until the oldest counted call leaves the window. At
/// discovery it discloses: the capability is listed unavailable, "Rate
/// limit reached: …", and nothing is counted. Memory: at most
/// [`RATE_LIMIT_MAX_KEYS`] pairs of at most `max_calls` times each.
pub fn rate_limit(max_calls: usize, window: Duration) -> RateLimit {
    let max_calls = max_calls.max(1);
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
    RateLimit {
        name: format!("rate-limit({max_calls} per {window_ms} ms)"),
        max_calls,
        window_ms,
        calls: Mutex::new(HashMap::new()),
    }
}

impl RateLimit {
    /// `Some(wait)` when the pair's window is full at `now`, dropping the
    /// times that left it. A time after `now` (the clock stepped back) is
    /// taken as `now`, so a wait is never longer than the window.
    fn full(&self, times: &mut VecDeque<u64>, now: u64) -> Option<u64> {
        for t in times.iter_mut() {
            *t = (*t).min(now);
        }
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
        &self.name
    }
    fn discovery(&self) -> Discovery {
        Discovery::Disclose
    }
    /// Checks only: a full window answers `Limit`; nothing is counted here.
    fn authorize(&self, ctx: &PolicyContext<'_>) -> PolicyDecision {
        let key = (ctx.consumer.id.to_string(), ctx.capability_id.to_string());
        let mut calls = lock(&self.calls);
        let Some(times) = calls.get_mut(&key) else {
            return PolicyDecision::Allow;
        };
        match self.full(times, ctx.now_ms) {
            None => PolicyDecision::Allow,
            Some(wait) => PolicyDecision::Limit {
                message: format!(
                    "Rate limit reached: at most {} call(s) every {} ms. Try again in {} s.",
                    self.max_calls,
                    self.window_ms,
                    wait.div_ceil(1_000)
                ),
                retry_after_ms: wait,
            },
        }
    }
    /// Counts the call (calls in flight at once may all have passed the
    /// check before either is counted).
    fn executing(&self, ctx: &PolicyContext<'_>) {
        let key = (ctx.consumer.id.to_string(), ctx.capability_id.to_string());
        let mut calls = lock(&self.calls);
        if !calls.contains_key(&key) && calls.len() >= RATE_LIMIT_MAX_KEYS {
            self.evict(&mut calls, ctx.now_ms);
        }
        let times = calls.entry(key).or_default();
        self.full(times, ctx.now_ms);
        if times.len() >= self.max_calls {
            times.pop_front();
        }
        times.push_back(ctx.now_ms);
    }
}
