//! What a UI framework adapter tracks for one registration
//! (`docs/frameworks.md`, "How the hooks track"): the texts and verdicts of
//! its closures, evaluated now, so that a reactive effect that calls
//! [`SurfaceRegistry::observe`] subscribes to exactly the state those
//! closures read, and re-announces the surface when it changes.

use crate::callback::Availability;
use crate::registration::RegistrationHandle;

use super::SurfaceRegistry;

/// One registration's closures evaluated at one moment: for a procedure
/// binding one item (its `when()`, its unavailable reason while `when()` is
/// false, its `describe()` text), for a component one item per view
/// capability, in definition order.
///
/// Two observations compare equal when the snapshot would show the same
/// availability, reasons and descriptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    items: Vec<ObservedItem>,
}

/// One capability of an [`Observation`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedItem {
    /// `when()` now (`true` without a `when()`).
    pub available: bool,
    /// The unavailable reason now, when `available` is false and a reason
    /// was given.
    pub unavailable_reason: Option<String>,
    /// The `describe()` text now (procedure bindings with a `describe()`),
    /// else `None`.
    pub description: Option<String>,
}

impl Observation {
    /// The observed capabilities (see [`Observation`]).
    pub fn items(&self) -> &[ObservedItem] {
        &self.items
    }
}

fn item(availability: &Availability, description: Option<String>) -> ObservedItem {
    let available = availability.holds();
    ObservedItem {
        available,
        unavailable_reason: if available {
            None
        } else {
            availability.reason_text()
        },
        description,
    }
}

impl SurfaceRegistry {
    /// Evaluates `registration`'s `when()`, unavailable reason and
    /// `describe()` now, without recording anything: what a UI framework
    /// adapter calls inside a reactive effect to track the state those
    /// closures read (`docs/frameworks.md`). `None` when the registration
    /// is no longer live (or belongs to another registry).
    ///
    /// The closures run without the registry lock held, as everywhere.
    pub fn observe(&self, registration: &RegistrationHandle) -> Option<Observation> {
        let (procedure, component) = self.entry_of(registration);
        if let Some(p) = procedure {
            let description = p.describe.as_ref().map(|describe| describe());
            return Some(Observation {
                items: vec![item(&p.availability, description)],
            });
        }
        let c = component?;
        Some(Observation {
            items: c
                .views
                .iter()
                .map(|v| item(&v.availability, None))
                .collect(),
        })
    }

    /// Re-announces the surface after an adapter saw an [`Observation`]
    /// change: records every `when()` ([`SurfaceRegistry::refresh_availability`])
    /// and, when no availability changed (a description or a reason did),
    /// bumps the version anyway ([`SurfaceRegistry::notify_changed`]). One
    /// bump either way; returns the surface version after it.
    pub fn observation_changed(&self) -> u64 {
        if !self.refresh_availability() {
            self.notify_changed();
        }
        self.surface_version()
    }
}
