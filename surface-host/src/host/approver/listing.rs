//! What the approver page and the JSON routes both list: the page asked
//! for (a cursor: the pending approvals are paged oldest first, without
//! end), a page of pending approvals with their conflicts, and why a
//! request was refused.

use std::collections::{HashMap, HashSet};

use axum::http::StatusCode;
use surface_store::{ApprovalCursor, ApprovalRecord, ApprovalState};

use super::Inner;

/// Why a decision was not made: the status of the JSON answer and a
/// sentence for the approver.
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) message: String,
}

pub(crate) fn refusal(status: StatusCode, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

/// The store could not be read: 503, without the store's own words.
pub(crate) fn store_refusal(_: impl std::fmt::Display) -> Refusal {
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "The host store cannot be read right now.",
    )
}

/// A page of pending approvals, oldest first.
pub(crate) struct Listed {
    /// The approvals of this page.
    pub(crate) rows: Vec<ApprovalRecord>,
    /// Where the next page starts, when more follow.
    pub(crate) next: Option<ApprovalCursor>,
    /// Backend approval ids of this page pending for more than one call
    /// (a conflict an approver must see: each row is still decided by its
    /// own id, and the backend's receipt tells the held call's from the
    /// other).
    pub(crate) conflicts: HashSet<String>,
}

/// The cursor of `?after=MS.ID` (`None` when absent: the first page).
pub(crate) fn page_cursor(
    query: &HashMap<String, String>,
) -> Result<Option<ApprovalCursor>, Refusal> {
    match query.get("after") {
        None => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| {
            refusal(
                StatusCode::BAD_REQUEST,
                "The page link is not valid; start from the first page.",
            )
        }),
    }
}

/// The page of pending approvals after `after` (the first page when
/// `None`), at most the page size, with the conflicts among them.
pub(crate) async fn pending_page(
    inner: &Inner,
    after: Option<&ApprovalCursor>,
) -> Result<Listed, Refusal> {
    let durable = inner.host.durable();
    let fetch = inner.page_size + 1;
    let mut rows = match after {
        None => durable.pending_approvals(fetch).await,
        Some(cursor) => durable.pending_approvals_after(cursor, fetch).await,
    }
    .map_err(store_refusal)?;
    let next = match rows.len() > inner.page_size as usize {
        true => {
            rows.truncate(inner.page_size as usize);
            rows.last().map(ApprovalRecord::cursor)
        }
        false => None,
    };
    let mut conflicts = HashSet::new();
    let backend_ids: HashSet<&str> = rows
        .iter()
        .map(|a| a.backend_approval_id.as_str())
        .collect();
    for backend_id in backend_ids {
        let named = durable
            .store()
            .backend_approvals(backend_id, 64)
            .await
            .map_err(store_refusal)?;
        let pending = named
            .iter()
            .filter(|a| a.state == ApprovalState::Pending)
            .count();
        if pending > 1 {
            conflicts.insert(backend_id.to_string());
        }
    }
    Ok(Listed {
        rows,
        next,
        conflicts,
    })
}

/// Every byte but `A-Z a-z 0-9 - _ .` is encoded.
pub(crate) const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.');
