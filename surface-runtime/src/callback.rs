//! The application closures the runtime stores: `when`, `describe`,
//! `unavailable_reason`, `bind` and view-capability handlers. They are
//! `Send + Sync` on native targets and plain on `wasm32` (browser closures
//! capture `Rc` signals), matching [`crate::sync`].

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::executor::ExecutionError;
use crate::sync::BoxFuture;

/// Declares a closure type that is `Send + Sync` natively and not on wasm32.
macro_rules! stored_closure {
    ($(#[$doc:meta])* $name:ident = ($($signature:tt)+);) => {
        $(#[$doc])*
        #[cfg(not(target_arch = "wasm32"))]
        pub(crate) type $name = dyn $($signature)+ + Send + Sync;
        $(#[$doc])*
        #[cfg(target_arch = "wasm32")]
        pub(crate) type $name = dyn $($signature)+;
    };
}

stored_closure! {
    /// `bind()`: the bound values, read from live UI state at execution.
    BindFn = (Fn() -> Result<Map<String, Value>, BindFailure>);
}
stored_closure! {
    /// `when()`: contextual availability.
    WhenFn = (Fn() -> bool);
}
stored_closure! {
    /// `describe()` and computed unavailable reasons.
    TextFn = (Fn() -> String);
}
stored_closure! {
    /// A registry's evaluation scope
    /// (`SurfaceRegistry::set_evaluation_scope`): runs its argument, the
    /// evaluation of one `when()`, unavailable reason or `describe()`.
    ScopeFn = (Fn(&mut dyn FnMut()));
}
stored_closure! {
    /// A view capability's local handler.
    HandlerFn = (Fn(Value) -> BoxFuture<'static, Result<Value, ExecutionError>>);
}

/// Why `bind()` produced no values. Audit only: the agent sees
/// `PRECONDITION_FAILED` (`details.reason: "binding-failed"`).
#[derive(Debug)]
pub(crate) enum BindFailure {
    /// The application's `try_bind` closure returned an error (its text).
    Application(String),
    /// The bound struct did not serialize to JSON.
    Serialize(serde_json::Error),
}

impl std::fmt::Display for BindFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindFailure::Application(text) => f.write_str(text),
            BindFailure::Serialize(error) => error.fmt(f),
        }
    }
}

/// Contextual availability: an optional `when()` and the reason shown
/// while it is false. Evaluated live, at snapshot and at invocation.
#[derive(Clone, Default)]
pub(crate) struct Availability {
    pub(crate) when: Option<Arc<WhenFn>>,
    pub(crate) reason: Option<Reason>,
}

impl Availability {
    /// Whether `when()` holds now (no `when()`: always available).
    pub(crate) fn holds(&self) -> bool {
        self.when.as_ref().is_none_or(|when| when())
    }

    /// The unavailable reason now, if one was given.
    pub(crate) fn reason_text(&self) -> Option<String> {
        self.reason.as_ref().map(Reason::text)
    }

    /// The same closures, each evaluated inside `scope`.
    pub(crate) fn scoped(self, scope: &Arc<ScopeFn>) -> Self {
        Availability {
            when: self.when.map(|when| {
                let scope = scope.clone();
                Arc::new(move || {
                    let mut holds = true;
                    scope(&mut || holds = when());
                    holds
                }) as Arc<WhenFn>
            }),
            reason: self.reason.map(|reason| match reason {
                Reason::Dynamic(text) => Reason::Dynamic(scoped_text(text, scope)),
                fixed @ Reason::Static(_) => fixed,
            }),
        }
    }
}

/// `text`, evaluated inside `scope`.
pub(crate) fn scoped_text(text: Arc<TextFn>, scope: &Arc<ScopeFn>) -> Arc<TextFn> {
    let scope = scope.clone();
    Arc::new(move || {
        let mut out = String::new();
        scope(&mut || out = text());
        out
    })
}

/// The `when` / `unavailable_reason` / `unavailable_reason_with` builder
/// methods, written once for every type with an
/// `availability: Availability` field.
macro_rules! availability_builders {
    ($what:literal) => {
        #[doc = concat!("Contextual availability of the ", $what, ", evaluated live at snapshot and at invocation time (a false `when()` ends a call with `CAPABILITY_NOT_AVAILABLE`).")]
        pub fn when<F>(mut self, when: F) -> Self
        where
            F: Fn() -> bool + $crate::sync::MaybeSend + $crate::sync::MaybeSync + 'static,
        {
            self.availability.when = Some(::std::sync::Arc::new(when));
            self
        }

        #[doc = concat!("A fixed reason shown while the ", $what, "'s `when()` is false.")]
        pub fn unavailable_reason(mut self, reason: impl Into<String>) -> Self {
            self.availability.reason = Some($crate::callback::Reason::fixed(reason));
            self
        }

        #[doc = concat!("A reason computed while the ", $what, "'s `when()` is false.")]
        pub fn unavailable_reason_with<F>(mut self, reason: F) -> Self
        where
            F: Fn() -> String + $crate::sync::MaybeSend + $crate::sync::MaybeSync + 'static,
        {
            self.availability.reason = Some($crate::callback::Reason::computed(
                ::std::sync::Arc::new(reason),
            ));
            self
        }
    };
}
pub(crate) use availability_builders;

/// A fixed reason text or a closure producing one.
#[derive(Clone)]
pub(crate) enum Reason {
    Static(Arc<str>),
    Dynamic(Arc<TextFn>),
}

impl Reason {
    /// A fixed reason.
    pub(crate) fn fixed(text: impl Into<String>) -> Self {
        Reason::Static(Arc::from(text.into()))
    }

    /// A reason computed when asked.
    pub(crate) fn computed(text: Arc<TextFn>) -> Self {
        Reason::Dynamic(text)
    }

    /// The text now.
    pub(crate) fn text(&self) -> String {
        match self {
            Reason::Static(s) => s.to_string(),
            Reason::Dynamic(f) => f(),
        }
    }
}
