//! `receipts show`: one receipt, as a card or JSON.

use std::io::Write;
use std::time::SystemTime;

use super::{run_error, Failed};
use crate::table::{Reading, ReceiptsTable};
use crate::view::{self, RouteOfForm};

pub(super) async fn show(
    table: &ReceiptsTable,
    key: &str,
    json: bool,
    payload: bool,
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let Some(receipt) = table
        .get(key, Reading::of(payload))
        .await
        .map_err(run_error)?
    else {
        return Err(Failed::Run(format!("no receipt {key}")));
    };
    if json {
        let _ = writeln!(out, "{}", view::json_of(&receipt, payload));
    } else {
        let route = match &receipt.form_ref {
            Some(reference) => route_of(table, reference).await,
            None => RouteOfForm::Unrouted,
        };
        let _ = write!(out, "{}", view::card(&receipt, payload, now, &route));
    }
    Ok(())
}

/// The route the worker delivers a receipt by, from its form reference. A
/// card is still shown when the routes cannot be read: an operator role
/// held to the receipts' own attributes may not read them.
async fn route_of(table: &ReceiptsTable, reference: &str) -> RouteOfForm {
    match table.routes().await {
        // By the route's name, never its form id (a Static Forms apiKey).
        Ok(stored) => stored
            .and_then(|stored| {
                let routes = &stored.routes;
                routes
                    .route_by_ref(reference)
                    .map(|route| format!("route {}", routes.shown(route)))
            })
            .map_or(RouteOfForm::Unrouted, RouteOfForm::Routed),
        Err(error) => RouteOfForm::Unknown(error.to_string()),
    }
}
