//! The seam between a browser session and the registry it exposes: the
//! four registry operations the session needs , as a small
//! object-safe trait so a session can hold any registry behind an `Arc`.
//! `SurfaceRegistry` implements it; tests may implement it to observe
//! exactly which calls reach the registry.

use std::sync::Arc;

use crate::cancellation::Cancellation;
use crate::confirmation::ConfirmationError;
use crate::confirmation::PendingConfirmation;
use crate::invocation::{AgentConsumer, AgentInvocation, AgentInvocationResult};
use crate::registry::SurfaceRegistry;
use crate::snapshot::SurfaceSnapshot;
use crate::sync::{BoxFuture, MaybeSend, MaybeSync};

/// Called by a [`SurfaceSource`] after every registration or availability
/// change (its argument is the new surface version). `Send + Sync` on native
/// targets, plain on `wasm32`.
#[cfg(not(target_arch = "wasm32"))]
pub type SourceListener = dyn Fn(u64) + Send + Sync;
/// Called by a [`SurfaceSource`] after every registration or availability
/// change (its argument is the new surface version). `Send + Sync` on native
/// targets, plain on `wasm32`.
#[cfg(target_arch = "wasm32")]
pub type SourceListener = dyn Fn(u64);

/// A live source subscription; dropping it unsubscribes.
pub trait SourceSubscription: MaybeSend + MaybeSync {}
impl<T: MaybeSend + MaybeSync> SourceSubscription for T {}

/// What a [`crate::host::BrowserSurfaceSession`] needs from the registry it
/// exposes.
pub trait SurfaceSource: MaybeSend + MaybeSync + 'static {
    /// The current `surfaceVersion` (cheap; checked on every call).
    fn surface_version(&self) -> u64;
    /// The snapshot `consumer` sees , a consistent cut.
    fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot;
    /// Runs the full pipeline (`docs/pipeline.md`). Cancelling `cancellation` ends the
    /// call with `CANCELLED` and fires the executor's signal; dropping the
    /// future drops the executor's future with it.
    fn invoke(
        &self,
        invocation: AgentInvocation,
        consumer: AgentConsumer,
        cancellation: Cancellation,
    ) -> BoxFuture<'static, AgentInvocationResult>;
    /// Calls `listener` after every change until the returned guard is
    /// dropped.
    fn subscribe(&self, listener: Arc<SourceListener>) -> Box<dyn SourceSubscription>;
    /// Approves a pending confirmation and returns it approved
    /// (`SurfaceRegistry::confirm`). Called only by
    /// `BrowserSurfaceSession::approve`, an application action. The default
    /// refuses every id ([`ConfirmationError::Unknown`]): a source that
    /// wraps a registry must forward this and [`Self::reject`], or held
    /// confirmations can never be approved (docs/host.md, "Confirmation
    /// while the call waits").
    fn confirm(&self, confirmation_id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        Err(ConfirmationError::Unknown(confirmation_id.to_string()))
    }
    /// Rejects a pending (or approved, unused) confirmation
    /// (`SurfaceRegistry::reject`). The default refuses every id.
    fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationError> {
        Err(ConfirmationError::Unknown(confirmation_id.to_string()))
    }
    /// A live confirmation: what the user is asked to approve
    /// (`SurfaceRegistry::pending_confirmation`). The default knows none; a
    /// held call then shows only the registry's summary text (its
    /// `HeldConfirmation::input` is `null`): a source that wraps a
    /// registry should forward this too.
    fn pending_confirmation(&self, confirmation_id: &str) -> Option<PendingConfirmation> {
        let _ = confirmation_id;
        None
    }
}

impl SurfaceSource for SurfaceRegistry {
    fn surface_version(&self) -> u64 {
        SurfaceRegistry::surface_version(self)
    }

    fn snapshot(&self, consumer: &AgentConsumer) -> SurfaceSnapshot {
        SurfaceRegistry::snapshot(self, consumer)
    }

    fn invoke(
        &self,
        invocation: AgentInvocation,
        consumer: AgentConsumer,
        cancellation: Cancellation,
    ) -> BoxFuture<'static, AgentInvocationResult> {
        let registry = self.clone();
        Box::pin(async move {
            registry
                .invoke_with_cancellation(invocation, &consumer, &cancellation)
                .await
        })
    }

    fn subscribe(&self, listener: Arc<SourceListener>) -> Box<dyn SourceSubscription> {
        Box::new(SurfaceRegistry::subscribe(self, move |change| {
            listener(change.surface_version)
        }))
    }

    fn confirm(&self, confirmation_id: &str) -> Result<PendingConfirmation, ConfirmationError> {
        SurfaceRegistry::confirm(self, confirmation_id)
    }

    fn reject(&self, confirmation_id: &str) -> Result<(), ConfirmationError> {
        SurfaceRegistry::reject(self, confirmation_id)
    }

    fn pending_confirmation(&self, confirmation_id: &str) -> Option<PendingConfirmation> {
        SurfaceRegistry::pending_confirmation(self, confirmation_id)
    }
}
