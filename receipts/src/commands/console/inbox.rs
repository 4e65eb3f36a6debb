//! The console's inbox and counts, read through the day index
//! (`table::by_day`): a page of receipts newest first, filtered by status,
//! destination, form and period, with where the next older page starts;
//! and a period's counts (`counts`) with what waits in the queue. Neither
//! reads the whole table: each reads the days it shows.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use clap::ValueEnum;
use serde_json::{json, Value};
use shared::receipt::format_timestamp;
use shared::Receipt;
use worker::ledger::PendingQueue;

use super::super::{destination_named, Failed};
use super::api::failed;
use super::counts::{Counts, Period};
use super::Served;
use crate::cli::StatusFilter;
use crate::table::by_day::Position;
use crate::view;

/// Receipts a page of the inbox shows.
const PAGE: usize = 50;
/// The longest a count of the queue may take.
const CENSUS_TIME: Duration = Duration::from_secs(10);

type Params = Query<HashMap<String, String>>;

/// What the inbox is asked for: `status`, `destination`, `form` (a route's
/// name as shown), `since` (a period's name) and, for an older page,
/// `olderAt` and `olderAfter` (as the page before answered).
struct InboxAsk {
    status: Option<StatusFilter>,
    destination: Option<&'static str>,
    form: Option<String>,
    period: Period,
    from: Position,
}

fn asked(params: &HashMap<String, String>, now: SystemTime) -> Result<InboxAsk, Failed> {
    let given = |name: &str| {
        params
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    let status = given("status")
        .map(|raw| {
            StatusFilter::from_str(raw, true)
                .map_err(|_| Failed::Usage(format!("status {raw:?} is not one the CLI lists")))
        })
        .transpose()?
        // The index holds no queue: every RECEIVED receipt waits in one.
        .map(|status| match status {
            StatusFilter::Pending => StatusFilter::Received,
            other => other,
        });
    let period = period_of(given("since"))?;
    let from = match given("olderAt") {
        None => Position {
            at: format_timestamp(now),
            after: None,
        },
        Some(at) => {
            let after = given("olderAfter").map(str::to_owned);
            if shared::receipt::parse_timestamp(at).is_none()
                || after
                    .as_deref()
                    .is_some_and(|pk| !shared::receipt::is_receipt_key(pk))
            {
                return Err(Failed::Usage(
                    "olderAt and olderAfter are not a position the inbox gave".to_owned(),
                ));
            }
            Position {
                at: at.to_owned(),
                after,
            }
        }
    };
    Ok(InboxAsk {
        status,
        destination: given("destination").map(destination_named).transpose()?,
        form: given("form").map(str::to_owned),
        period,
        from,
    })
}

fn period_of(name: Option<&str>) -> Result<Period, Failed> {
    let name = name.unwrap_or("7d");
    Period::named(name)
        .ok_or_else(|| Failed::Usage(format!("{name:?} is not a period the console shows")))
}

/// Whether `receipt` is one the inbox is asked for; `route` names its form.
fn wanted(receipt: &Receipt, route: Option<&str>, ask: &InboxAsk) -> bool {
    let status_holds = match ask.destination {
        Some(destination) => crate::lanes::at_destination(receipt, destination, ask.status),
        None => ask
            .status
            .is_none_or(|status| crate::lanes::receipt_is(receipt, status)),
    };
    status_holds && ask.form.as_deref().is_none_or(|form| route == Some(form))
}

/// `GET /api/receipts?...`: a page of the inbox, each row as `receipts
/// list --json` gives it with its route's name, and `older` (where the
/// next page starts, or null).
pub(super) async fn receipts(State(served): State<Arc<Served>>, Query(params): Params) -> Response {
    let now = SystemTime::now();
    let table = &served.console.table;
    let ask = match asked(&params, now) {
        Ok(ask) => ask,
        Err(error) => return failed(error),
    };
    let routes = table
        .routes()
        .await
        .ok()
        .flatten()
        .map(|stored| stored.routes);
    // Each receipt's route by its name, as `show` names it: never a form
    // id (a Static Forms form id is its API key).
    let route_of = |receipt: &Receipt| {
        let routes = routes.as_ref()?;
        let route = routes.route_by_ref(receipt.form_ref.as_deref()?)?;
        Some(routes.shown(route))
    };
    let since = format_timestamp(
        now.checked_sub(ask.period.span())
            .unwrap_or(SystemTime::UNIX_EPOCH),
    );
    let page = match table
        .newest(&since, &ask.from, PAGE, |receipt| {
            wanted(receipt, route_of(receipt).as_deref(), &ask)
        })
        .await
    {
        Ok(page) => page,
        Err(error) => return failed(Failed::Run(error.to_string())),
    };
    let rows: Vec<Value> = page
        .receipts
        .iter()
        .map(|receipt| {
            let mut row = view::json_of(receipt, false);
            if let (Some(route), Some(fields)) = (route_of(receipt), row.as_object_mut()) {
                fields.insert("route".to_owned(), Value::String(route));
            }
            row
        })
        .collect();
    let older = page
        .older
        .map(|position| json!({"at": position.at, "after": position.after}));
    Json(json!({ "receipts": rows, "older": older })).into_response()
}

/// `GET /api/counts?since=PERIOD`: the period's counts (`counts::Counts`)
/// and what waits now (the queue index's census, as every pass counts it).
pub(super) async fn counts(State(served): State<Arc<Served>>, Query(params): Params) -> Response {
    let now = SystemTime::now();
    let table = &served.console.table;
    let period = match period_of(
        params
            .get("since")
            .map(String::as_str)
            .filter(|s| !s.is_empty()),
    ) {
        Ok(period) => period,
        Err(error) => return failed(error),
    };
    let since = now
        .checked_sub(period.span())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut counts = Counts::new(period);
    if let Err(error) = table
        .each_received(since, now, |receipt| counts.add(&receipt, now))
        .await
    {
        return failed(Failed::Run(error.to_string()));
    }
    let ledger = worker::ledger::dynamodb::DynamoLedger::new(table.client().clone(), table.name());
    let waiting = match ledger.census(Instant::now() + CENSUS_TIME).await {
        Ok(census) => json!({
            "pending": census.pending,
            "failed": census.failed,
            "notices": census.notices,
            "oldestPendingAgeSeconds": census.oldest_received_at
                .as_deref()
                .and_then(shared::receipt::parse_timestamp)
                .and_then(|at| now.duration_since(at).ok())
                .map(|age| age.as_secs()),
            "complete": census.complete,
        }),
        // A role held to the day index (docs/personal-data.md) may not
        // read the queue's: the period's counts still stand.
        Err(error) => json!({ "error": error.to_string() }),
    };
    let mut body = serde_json::to_value(&counts).unwrap_or(Value::Null);
    if let Some(fields) = body.as_object_mut() {
        fields.insert("waiting".to_owned(), waiting);
    }
    Json(body).into_response()
}
