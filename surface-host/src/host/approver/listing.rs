//! What the approver page and the JSON routes both list: the page number
//! asked for, a page of pending approvals, and why a request was refused.

use std::collections::HashMap;

use axum::http::StatusCode;
use surface_store::ApprovalRecord;

use super::{Inner, MAX_APPROVALS_LISTED};

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

/// The page number of `?page=N` (0 when absent): `Err` when not a number
/// or past [`MAX_APPROVALS_LISTED`].
pub(crate) fn page_number(inner: &Inner, query: &HashMap<String, String>) -> Result<u32, Refusal> {
    let page = match query.get("page") {
        None => 0,
        Some(text) => text
            .parse::<u32>()
            .map_err(|_| refusal(StatusCode::BAD_REQUEST, "The page must be a number."))?,
    };
    if page.saturating_mul(inner.page_size) >= MAX_APPROVALS_LISTED {
        return Err(refusal(
            StatusCode::BAD_REQUEST,
            format!("Only the oldest {MAX_APPROVALS_LISTED} pending approvals are listed."),
        ));
    }
    Ok(page)
}

/// Page `page` of the pending approvals, oldest first, and whether more
/// follow.
pub(crate) async fn pending_page(
    inner: &Inner,
    page: u32,
) -> Result<(Vec<ApprovalRecord>, bool), Refusal> {
    let offset = page * inner.page_size;
    let end = offset + inner.page_size;
    let fetch = (end + 1).min(MAX_APPROVALS_LISTED);
    let mut rows = inner
        .host
        .store()
        .pending_approvals(fetch)
        .await
        .map_err(store_refusal)?;
    let more = rows.len() > end as usize;
    rows.truncate(end as usize);
    Ok((rows.split_off((offset as usize).min(rows.len())), more))
}
