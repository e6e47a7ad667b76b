//! `/api-transactions/transactions`: the project's transaction history, newest first, with cursor
//! pagination (`?limit=1..100&cursor=...&user_fullname=...&session_id=...`), and one transaction by
//! request id at `/api-transactions/transactions/{request_id}`.

use base64::Engine as _;
use serde_json::{json, Value};

use super::call::{Call, Handler, Reply};
use super::endpoint::Endpoint;
use super::error::ApiError;
use crate::clock::format_timestamp;
use crate::service::transactions::{TransactionFilter, TransactionRecord};

/// Page size when `limit` is not given, and the largest accepted.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// Largest `limit`.
pub const MAX_PAGE_SIZE: usize = 100;

const LIST_PARAMETERS: &[&str] = &["limit", "cursor", "user_fullname", "session_id"];

fn transaction_json(record: TransactionRecord) -> Value {
    let parse =
        |text: Option<String>| text.and_then(|text| serde_json::from_str::<Value>(&text).ok());
    json!({
        "request_id": record.request_id,
        "method": record.method,
        "endpoint": record.endpoint,
        "status_code": record.status_code,
        "user_fullname": record.user_fullname,
        "session_id": record.session_id,
        "action_trigger": record.action_trigger,
        "device_info": parse(record.device_info),
        "geo_location": parse(record.geo_location),
        "request_tags": record.request_tags,
        "result": parse(record.result),
        "created_at": format_timestamp(record.created_at),
    })
}

pub(super) fn encode_cursor(before: i64) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("t{before}"))
}

pub(super) fn decode_cursor(cursor: &str) -> Result<i64, ApiError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix('t')?.parse::<i64>().ok())
        .filter(|before| *before > 0)
        .ok_or_else(|| ApiError::bad_request("cursor is not a cursor returned by this endpoint"))
}

/// The `limit` (default [`DEFAULT_PAGE_SIZE`], 1 to [`MAX_PAGE_SIZE`]) and `cursor` of a list
/// request whose query may hold `allowed`: the cursor pages of transactions and jobs.
pub(super) fn page(call: &Call<'_>, allowed: &[&str]) -> Result<(usize, Option<i64>), ApiError> {
    let limit = match call.query_value(allowed, "limit")? {
        None => DEFAULT_PAGE_SIZE,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|limit| (1..=MAX_PAGE_SIZE).contains(limit))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "limit must be an integer from 1 to {MAX_PAGE_SIZE}"
                ))
            })?,
    };
    let before = call
        .query_value(allowed, "cursor")?
        .map(decode_cursor)
        .transpose()?;
    Ok((limit, before))
}

/// GET the list.
pub(super) fn list(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    let (limit, before) = page(call, LIST_PARAMETERS)?;
    let filter = TransactionFilter {
        user_fullname: call
            .query_value(LIST_PARAMETERS, "user_fullname")?
            .map(str::to_owned),
        session_id: call
            .query_value(LIST_PARAMETERS, "session_id")?
            .map(str::to_owned),
    };
    let page = call
        .engine
        .audit()
        .list(&call.key.project_id, &filter, before, limit)
        .map_err(|error| call.error(error))?;
    let data: Vec<Value> = page
        .transactions
        .into_iter()
        .map(transaction_json)
        .collect();
    Ok(Reply::ok(json!({
        "message": "ok",
        "data": data,
        "next_cursor": page.next_before.map(encode_cursor),
    })))
}

/// GET one by request id.
pub(super) fn get(call: &mut Call<'_>) -> Result<Reply, ApiError> {
    call.query_value(&[], "")?;
    let request_id = call.path_id.clone().unwrap_or_default();
    let record = call
        .engine
        .audit()
        .get(&call.key.project_id, &request_id)
        .map_err(|error| call.error(error))?
        .ok_or_else(|| ApiError::new(404, "transaction not found"))?;
    Ok(Reply::ok(
        json!({ "message": "ok", "data": transaction_json(record) }),
    ))
}

/// The endpoints this module answers, and how (read by the dispatch in `handle.rs`).
pub(super) const HANDLERS: &[(Endpoint, Handler)] = &[
    (Endpoint::TransactionList, list),
    (Endpoint::TransactionGet, get),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        assert_eq!(decode_cursor(&encode_cursor(42)).unwrap(), 42);
        assert_eq!(decode_cursor("!!").unwrap_err().status, 400);
        assert!(
            decode_cursor(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("t-5")).is_err()
        );
    }
}
