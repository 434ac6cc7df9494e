//! [`sleep`] and [`BrowserTimer`]: `setTimeout` as a future.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use std::cell::Cell;
use std::rc::Rc;
use std::task::Waker;

use js_sys::{Function, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::clock::Timer;
use crate::sync::BoxFuture;

/// The longest delay `setTimeout` honours: 2³¹ − 1 ms (about 24.8 days).
/// Browsers fire a longer timeout *at once*; [`sleep`] clamps to this
/// value instead.
pub const MAX_TIMER_DELAY: Duration = Duration::from_millis(i32::MAX as u64);

/// A registry [`Timer`] over the global `setTimeout` (window or worker).
///
/// ```ignore
/// let registry = SurfaceRegistry::builder(api::authority())
///     .timer(Arc::new(surface_runtime::browser::BrowserTimer))
///     .build();
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct BrowserTimer;

impl Timer for BrowserTimer {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(sleep(duration))
    }
}

/// A future that completes after `duration` (clamped to
/// [`MAX_TIMER_DELAY`]; whole milliseconds, rounded up). Dropping it
/// before it fires calls `clearTimeout` and frees its callback, so an
/// abandoned sleep leaves nothing behind. Where the global object has no
/// `setTimeout` the future never completes.
pub fn sleep(duration: Duration) -> Sleep {
    let delay = duration.min(MAX_TIMER_DELAY);
    let mut ms = delay.as_millis();
    if Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)) < delay {
        ms += 1;
    }
    let ms = i32::try_from(ms).unwrap_or(i32::MAX);
    let shared = Rc::new(Fired::default());
    let global = js_sys::global();
    let set_timeout = Reflect::get(&global, &JsValue::from_str("setTimeout"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    let Some(set_timeout) = set_timeout else {
        return Sleep {
            shared,
            callback: None,
            handle: JsValue::UNDEFINED,
        };
    };
    let callback = Closure::<dyn FnMut()>::new({
        let shared = shared.clone();
        move || {
            shared.fired.set(true);
            if let Some(waker) = shared.waker.take() {
                waker.wake();
            }
        }
    });
    let handle = set_timeout
        .call2(&global, callback.as_ref(), &JsValue::from(ms))
        .unwrap_or(JsValue::UNDEFINED);
    Sleep {
        shared,
        callback: Some(callback),
        handle,
    }
}

#[derive(Default)]
struct Fired {
    fired: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

/// The future of [`sleep`].
#[must_use = "a sleep does nothing unless awaited"]
pub struct Sleep {
    shared: Rc<Fired>,
    callback: Option<Closure<dyn FnMut()>>,
    handle: JsValue,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("fired", &self.shared.fired.get())
            .finish()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.shared.fired.get() {
            return Poll::Ready(());
        }
        if self.callback.is_some() {
            self.shared.waker.set(Some(cx.waker().clone()));
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if self.shared.fired.get() || self.callback.is_none() {
            return;
        }
        // Cleared before the callback is freed: a cleared timeout never
        // calls it.
        let global = js_sys::global();
        if let Some(clear) = Reflect::get(&global, &JsValue::from_str("clearTimeout"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
        {
            let _ = clear.call1(&global, &self.handle);
        } else if let Some(callback) = self.callback.take() {
            // Cannot clear: keep the callback alive for the timer.
            callback.forget();
        }
    }
}
