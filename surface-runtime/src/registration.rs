//! Registration identity: the registration ids of the snapshot (`r1`,
//! `r2`, … — unique for a registry's lifetime, never reused) and the
//! [`RegistrationHandle`] that keeps a registration alive.
//!
//! The handle only knows how to tell its owner to unregister
//! ([`Unregister`]), so the types that take a handle (a binding's
//! [`context`](crate::AgentProcedureBinding::context)) need nothing of the
//! registry.

use std::fmt;
use std::sync::Weak;

use crate::component::ComponentContext;
use crate::sync::{MaybeSend, MaybeSync};

/// What a [`RegistrationHandle`] calls when it is dropped.
pub(crate) trait Unregister: MaybeSend + MaybeSync {
    /// Removes registration `number` (a no-op when it is already gone).
    fn unregister(&self, number: u64, registration_id: &str);
}

/// Keeps a registration alive; dropping it unregisters (and bumps
/// `surfaceVersion`). For a component it is also what
/// [`crate::AgentProcedureBinding::context`] takes.
#[must_use = "dropping the handle unregisters immediately"]
pub struct RegistrationHandle {
    owner: Weak<dyn Unregister>,
    number: u64,
    registration_id: String,
    component: Option<ComponentContext>,
}

impl fmt::Debug for RegistrationHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrationHandle")
            .field("registration_id", &self.registration_id)
            .field("component", &self.component)
            .finish()
    }
}

impl RegistrationHandle {
    /// The handle of registration `number`, owned by `owner`.
    pub(crate) fn new(
        owner: Weak<dyn Unregister>,
        number: u64,
        component: Option<ComponentContext>,
    ) -> Self {
        Self {
            owner,
            number,
            registration_id: registration_id(number),
            component,
        }
    }

    /// The registration id (as in the snapshot).
    pub fn registration_id(&self) -> &str {
        &self.registration_id
    }

    /// The component type and instance id, for component registrations.
    pub fn component_context(&self) -> Option<&ComponentContext> {
        self.component.as_ref()
    }

    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Whether the registry whose shared state is at `owner` issued it.
    pub(crate) fn issued_by<T>(&self, owner: *const T) -> bool {
        std::ptr::addr_eq(self.owner.as_ptr(), owner)
    }

    /// Unregisters now (same as dropping).
    pub fn unregister(self) {}
}

impl Drop for RegistrationHandle {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.unregister(self.number, &self.registration_id);
        }
    }
}

/// The registration id of registration `number`: `r` and the decimal
/// number.
pub(crate) fn registration_id(number: u64) -> String {
    format!("r{number}")
}

/// The number of a registration id, accepting only the canonical spelling
/// [`registration_id`] produces: `r` and the decimal number without sign or
/// leading zeros (`r4`, never `r04`, `r+4`, `r00004`).
pub(crate) fn parse_registration_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('r')?;
    let canonical =
        digits.bytes().all(|b| b.is_ascii_digit()) && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_ids_round_trip() {
        assert_eq!(parse_registration_id(&registration_id(17)), Some(17));
        assert_eq!(parse_registration_id("x17"), None);
        assert_eq!(parse_registration_id("r"), None);
        assert_eq!(parse_registration_id("r0"), Some(0));
        for alias in [
            "r017", "r+17", "r00017", "r 17", "r17 ", "r-0", "R17", "r١٧",
        ] {
            assert_eq!(parse_registration_id(alias), None, "{alias}");
        }
        assert_eq!(parse_registration_id("r99999999999999999999999"), None);
    }
}
