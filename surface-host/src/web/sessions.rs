//! Page session cookies: issued on a page load, bounded in number and
//! lifetime. A session is *used* once a request authenticates with it; when
//! the table is full the oldest never-used session is evicted, so a flood
//! of page loads (which never use their cookies) cannot lock out a user
//! whose page did.

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
    /// (`; Secure` with [`PageSessions::secure`]).
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

    /// Adds `Secure` to the cookie (the page is served over TLS).
    pub fn secure(mut self) -> Self {
        self.secure = true;
        self
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

    /// The session of the request's cookie, if live; marks it used. Call
    /// it before reading the request's body.
    pub fn authenticate(&self, headers: &HeaderMap) -> Option<PageSession<T>> {
        let token = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie)
            .map(|(_, value)| SessionToken(value.to_string()))?;
        let now = Instant::now();
        let mut table = self.lock();
        let key = token.digest();
        let entry = table.entries.get(&key)?;
        if self.expired(entry, now) {
            let seq = entry.seq;
            table.entries.remove(&key);
            table.unused.remove(&seq);
            return None;
        }
        let seq = entry.seq;
        table.unused.remove(&seq);
        let entry = table.entries.get_mut(&key)?;
        entry.last_used = Some(now);
        Some(PageSession {
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
