//! `receipts show`: one receipt, as a card or JSON.

use std::io::Write;
use std::time::SystemTime;

use super::{run_error, Failed};
use crate::table::{Reading, ReceiptsTable};
use crate::view;

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
        let routed_form = match &receipt.form_ref {
            Some(reference) => routed_form(table, reference).await?,
            None => None,
        };
        let _ = write!(
            out,
            "{}",
            view::card(&receipt, payload, now, routed_form.as_deref())
        );
    }
    Ok(())
}

/// The form whose stored route a receipt's form reference names, if one
/// does: the route the worker delivers it by.
async fn routed_form(table: &ReceiptsTable, reference: &str) -> Result<Option<String>, Failed> {
    let stored = table.routes().await.map_err(run_error)?;
    Ok(stored.and_then(|stored| {
        stored
            .routes
            .route_by_ref(reference)
            .map(|route| route.form.clone())
    }))
}
