//! Page session cookies: issued on a page load, bounded in number and
//! lifetime. A session is *used* once a request authenticates with it; when
//! the table is full the oldest never-used session is evicted, so a flood
//! of page loads (which never use their cookies) cannot lock out a user
//! whose page did.
//!
//! A request carrying the cookie's name twice is refused
//! ([`SessionRefusal::Duplicate`]): browsers do not separate cookies by
//! port, so a page on another port of the same host can *write* a cookie
//! of this name (with a longer `Path`, sent first) to run this page in a
//! session of its own choosing. Over https the cookie is named
//! `__Host-NAME` (`Secure`, `Path=/`, no `Domain`), which a page of
//! another origin cannot set.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap, HeaderValue};

/// Default [`SessionLimits::max_sessions`]: 10,000.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default [`SessionLimits::unused_ttl`]: 60 seconds.
pub const DEFAULT_UNUSED_TTL: Duration = Duration::from_secs(60);
/// Default [`SessionLimits::idle_ttl`]: 30 minutes.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(30 * 60);
/// Default [`SessionLimits::lifetime`]: 12 hours.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// Bounds of [`PageSessions`].
#[derive(Clone, Debug)]
pub struct SessionLimits {
    /// Sessions kept at most (default [`DEFAULT_MAX_SESSIONS`]). At the
    /// bound, expired sessions are dropped, then the oldest never-used
    /// one; when every session is live and used, [`PageSessions::issue`]
    /// refuses (HTTP 503, "try again later") until one expires.
    pub max_sessions: usize,
    /// A session no request has used expires this long after its issue
    /// (default [`DEFAULT_UNUSED_TTL`]).
    pub unused_ttl: Duration,
    /// A used session expires this long after its last use (default
    /// [`DEFAULT_IDLE_TTL`]).
    pub idle_ttl: Duration,
    /// Every session expires this long after its issue (default
    /// [`DEFAULT_LIFETIME`]); also the cookie's `Max-Age`.
    pub lifetime: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            max_sessions: DEFAULT_MAX_SESSIONS,
            unused_ttl: DEFAULT_UNUSED_TTL,
            idle_ttl: DEFAULT_IDLE_TTL,
            lifetime: DEFAULT_LIFETIME,
        }
    }
}

/// A session's cookie value (64 hex digits from the OS's randomness; the
/// table keeps only its SHA-256).
#[derive(Clone, PartialEq, Eq)]
pub struct SessionToken(String);

impl std::fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionToken(…)")
    }
}

impl SessionToken {
    fn digest(&self) -> [u8; 32] {
        surface_runtime::hash::sha256(self.0.as_bytes())
    }
}

/// What [`PageSessions::issue`] returns: the token and its `Set-Cookie`.
#[derive(Clone, Debug)]
pub struct IssuedSession {
    /// The new session's token.
    pub token: SessionToken,
    /// `NAME=TOKEN; Path=/; HttpOnly; SameSite=Strict; Max-Age=…`
    /// (with [`PageSessions::secure`]: `__Host-NAME=…; …; Secure`).
    pub set_cookie: HeaderValue,
}

/// An authenticated request's session.
#[derive(Clone, Debug)]
pub struct PageSession<T> {
    /// Its token (to [`update`](PageSessions::update) it later).
    pub token: SessionToken,
    /// The application's data, as of the request.
    pub data: T,
}

struct Entry<T> {
    data: T,
    issued: Instant,
    last_used: Option<Instant>,
    seq: u64,
}

struct Table<T> {
    entries: HashMap<[u8; 32], Entry<T>>,
    /// Never-used sessions, oldest first.
    unused: BTreeMap<u64, [u8; 32]>,
    next: u64,
}

/// The table of page sessions, each carrying the application's `T`.
pub struct PageSessions<T> {
    table: Mutex<Table<T>>,
    limits: SessionLimits,
    cookie: String,
    secure: bool,
}

/// Why [`PageSessions::check`] found no session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionRefusal {
    /// The request carries no cookie of this name.
    #[error("no session cookie: reload the page")]
    Missing,
    /// The request carries the cookie's name more than once (another
    /// page of this host wrote one): refused, whichever is genuine.
    #[error("two session cookies (another page on this host set one): reload the page")]
    Duplicate,
    /// The token is unknown or expired.
    #[error("the session expired: reload the page")]
    Unknown,
}

/// The table is full of live, used sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} page sessions are live and in use; try again later")]
pub struct SessionsFull(pub usize);

impl<T: Clone> PageSessions<T> {
    /// An empty table whose cookie is named `cookie`.
    pub fn new(cookie: impl Into<String>, limits: SessionLimits) -> Self {
        Self {
            table: Mutex::new(Table {
                entries: HashMap::new(),
                unused: BTreeMap::new(),
                next: 0,
            }),
            limits,
            cookie: cookie.into(),
            secure: false,
        }
    }

    /// The page is served over TLS: the cookie is named `__Host-` and the
    /// name given to [`new`](Self::new), with `Secure` (and, as always,
    /// `Path=/` and no `Domain`), so no page of another origin can set it.
    pub fn secure(mut self) -> Self {
        self.make_secure();
        self
    }

    pub(crate) fn make_secure(&mut self) {
        if !self.secure {
            self.cookie = format!("__Host-{}", self.cookie);
            self.secure = true;
        }
    }

    /// The cookie's name (`__Host-` prefixed once [`secure`](Self::secure)).
    pub fn cookie_name(&self) -> &str {
        &self.cookie
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table<T>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn expired(&self, entry: &Entry<T>, now: Instant) -> bool {
        let since = |t: Instant| now.saturating_duration_since(t);
        since(entry.issued) >= self.limits.lifetime
            || match entry.last_used {
                None => since(entry.issued) >= self.limits.unused_ttl,
                Some(used) => since(used) >= self.limits.idle_ttl,
            }
    }

    /// Issues a session carrying `data`.
    ///
    /// # Errors
    /// [`SessionsFull`] when `max_sessions` live sessions have all been used.
    ///
    /// # Panics
    /// When the platform's randomness fails (no token is better than a
    /// guessable one).
    pub fn issue(&self, data: T) -> Result<IssuedSession, SessionsFull> {
        let now = Instant::now();
        let mut table = self.lock();
        if table.entries.len() >= self.limits.max_sessions {
            let expired: Vec<[u8; 32]> = table
                .entries
                .iter()
                .filter(|(_, e)| self.expired(e, now))
                .map(|(k, _)| *k)
                .collect();
            for key in expired {
                if let Some(e) = table.entries.remove(&key) {
                    table.unused.remove(&e.seq);
                }
            }
        }
        if table.entries.len() >= self.limits.max_sessions {
            let Some((_, oldest)) = table.unused.pop_first() else {
                return Err(SessionsFull(table.entries.len()));
            };
            table.entries.remove(&oldest);
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the platform's randomness");
        let token = SessionToken(hex::encode(bytes));
        let seq = table.next;
        table.next += 1;
        table.unused.insert(seq, token.digest());
        table.entries.insert(
            token.digest(),
            Entry {
                data,
                issued: now,
                last_used: None,
                seq,
            },
        );
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
            self.cookie,
            token.0,
            self.limits.lifetime.as_secs(),
            if self.secure { "; Secure" } else { "" }
        );
        let set_cookie = HeaderValue::from_str(&cookie).expect("hex and ASCII");
        Ok(IssuedSession { token, set_cookie })
    }

    /// `Set-Cookie` values that expire this cookie's name at every path
    /// of `request_path` other than `/` (with and without a trailing
    /// slash), when the request carries the name more than once: the
    /// copies another page of this host wrote with a longer `Path` are
    /// deleted, so the reload the refusal asks for works (this host's own
    /// cookie has `Path=/` and is kept). Empty otherwise, and over https
    /// (a `__Host-` cookie has `Path=/` only).
    pub fn planted_cookie_clears(
        &self,
        headers: &HeaderMap,
        request_path: &str,
    ) -> Vec<HeaderValue> {
        if self.secure || self.count(headers) < 2 {
            return Vec::new();
        }
        let mut paths: Vec<&str> = Vec::new();
        for (index, byte) in request_path.bytes().enumerate().skip(1) {
            if byte == b'/' {
                paths.extend([&request_path[..index], &request_path[..=index]]);
            }
        }
        if request_path.len() > 1 && !request_path.ends_with('/') {
            paths.push(request_path);
        }
        paths
            .into_iter()
            .take(16)
            .filter_map(|path| {
                let clear = format!("{}=; Path={path}; Max-Age=0", self.cookie);
                HeaderValue::from_str(&clear).ok()
            })
            .collect()
    }

    /// How many cookies of this name the request carries.
    fn count(&self, headers: &HeaderMap) -> usize {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == self.cookie)
            .count()
    }

    /// The session of the request's cookie, if live; marks it used. Call
    /// it before reading the request's body. `None` for every
    /// [`SessionRefusal`] (see [`check`](Self::check)).
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<PageSession<T>> {
        self.check(headers).ok()
    }

    /// The session of the request's cookie, if live; marks it used.
    ///
    /// # Errors
    /// [`SessionRefusal`]: no cookie, the cookie's name twice (never
    /// authenticated, whichever value is genuine), an unknown or expired
    /// token.
    pub fn check(&self, headers: &HeaderMap) -> Result<PageSession<T>, SessionRefusal> {
        let mut values = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == self.cookie)
            .map(|(_, value)| value);
        let value = values.next().ok_or(SessionRefusal::Missing)?;
        if values.next().is_some() {
            return Err(SessionRefusal::Duplicate);
        }
        let token = SessionToken(value.to_string());
        let now = Instant::now();
        let mut table = self.lock();
        let key = token.digest();
        let entry = table.entries.get(&key).ok_or(SessionRefusal::Unknown)?;
        let seq = entry.seq;
        if self.expired(entry, now) {
            table.entries.remove(&key);
            table.unused.remove(&seq);
            return Err(SessionRefusal::Unknown);
        }
        table.unused.remove(&seq);
        let entry = table.entries.get_mut(&key).ok_or(SessionRefusal::Unknown)?;
        entry.last_used = Some(now);
        Ok(PageSession {
            token,
            data: entry.data.clone(),
        })
    }

    /// The data of a live session, without marking it used.
    pub fn get(&self, token: &SessionToken) -> Option<T> {
        let table = self.lock();
        let entry = table.entries.get(&token.digest())?;
        (!self.expired(entry, Instant::now())).then(|| entry.data.clone())
    }

    /// Changes a session's data; returns whether it exists.
    pub fn update(&self, token: &SessionToken, change: impl FnOnce(&mut T)) -> bool {
        match self.lock().entries.get_mut(&token.digest()) {
            Some(entry) => {
                change(&mut entry.data);
                true
            }
            None => false,
        }
    }

    /// Every session's data (expired ones not yet dropped included).
    pub fn all(&self) -> Vec<T> {
        self.lock()
            .entries
            .values()
            .map(|e| e.data.clone())
            .collect()
    }

    /// Sessions in the table.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
