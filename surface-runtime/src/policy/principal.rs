//! [`Principal`]: who the page's user is, as far as the built-in policies
//! need to know (`docs/pipeline.md`, "Policies at discovery").

use std::collections::BTreeSet;

/// The signed-in user the registry's policies see
/// ([`crate::SurfaceRegistry::set_principal`]). It is what the page was told
/// by its own backend and is advisory: it shapes what the agent is shown,
/// while the server decides every call again with its own session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Principal {
    /// The user's id (never shown to the agent).
    pub user_id: String,
    /// The user's tenant, for [`super::tenant_boundary`].
    pub tenant_id: Option<String>,
    /// Permission names, for [`super::has_permission`] (exact,
    /// case-sensitive matches; no wildcards).
    pub permissions: BTreeSet<String>,
}

impl Principal {
    /// A user with no tenant and no permission.
    pub fn new(user_id: impl Into<String>) -> Self {
        Self {
            user_id: user_id.into(),
            tenant_id: None,
            permissions: BTreeSet::new(),
        }
    }

    /// The same user in `tenant_id`.
    #[must_use]
    pub fn tenant(mut self, tenant_id: impl Into<String>) -> Self {
        self.tenant_id = Some(tenant_id.into());
        self
    }

    /// The same user with `permission` granted too.
    #[must_use]
    pub fn permission(mut self, permission: impl Into<String>) -> Self {
        self.permissions.insert(permission.into());
        self
    }

    /// Whether `permission` is granted.
    pub fn has_permission(&self, permission: &str) -> bool {
        self.permissions.contains(permission)
    }
}
