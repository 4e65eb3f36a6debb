//! `receipts forget --email ADDRESS --everywhere`: the person erased in
//! the stack, at every destination of the stack by its vendor's own
//! deletion, and in the sender's copy where its API deletes, as steps of
//! one erasure (`shared::erasure::plan`) saved after each, so a run cut
//! off anywhere is resumed by running the same command again.
//!
//! A run finds first (the stack's copies, the ids the stack kept of the
//! person's records at each destination, the person's submissions the
//! sender lists in the window), says what it will do, asks, and saves
//! what it found in the erasure's item before changing anything: the
//! stack's own copies, which held those ids, are erased next. Then each
//! destination, then the sender. Exit 0 only when every step is done.
//!
//! The CLI runs every deletion itself, with the stack's own credentials
//! (read with the operator's AWS credentials): no step is left to the
//! worker, so a run never waits on another function, and the worker needs
//! no deletion rights.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::SystemTime;

use shared::destination::{DestinationKind, ErasureIds};
use shared::erasure::plan::{erasure_id, job_key, Place, Round, Step};
use shared::newest::GateSecret;
use shared::receipt::format_timestamp;
use shared::Receipt;
use worker::destinations::{
    ConfiguredDestination, Destination, DestinationError, Forgotten, Person,
};

use super::super::audit::SenderSide;
use super::super::{run_error, Failed};
use super::stack::{change, confirmed, describe, find, Found, Request};
use crate::leads::LeadsTable;
use crate::table::erasures::StoredErasures;
use crate::table::ReceiptsTable;

/// Everything a run needs beside the tables.
pub struct Everywhere {
    pub secret: GateSecret,
    /// The stack's destinations, in the order it names them, built.
    pub destinations: Vec<(DestinationKind, ConfiguredDestination)>,
    pub sender: SenderSide,
}

/// The places of an erasure: the stack, each destination with a copy of
/// its own (the leads table is the stack's), the sender.
fn places(plan: &Everywhere, sender: shared::Sender) -> Vec<Place> {
    let mut places = vec![Place::Stack];
    places.extend(
        plan.destinations
            .iter()
            .map(|(kind, _)| *kind)
            .filter(|kind| !kind.profile().erasure.is_empty())
            .map(Place::Destination),
    );
    places.push(Place::Sender(sender));
    places
}

/// The ids of the person's records at `kind` that the stack kept: in the
/// destination's person memory (on its gate item: the stack's key for the
/// first destination, its own for each next one), or on the person's
/// receipts.
async fn kept_ids(
    table: &ReceiptsTable,
    plan: &Everywhere,
    index: usize,
    kind: DestinationKind,
    email: &str,
    receipts: &[Receipt],
) -> Result<Vec<String>, Failed> {
    Ok(match kind.profile().erasure_ids {
        ErasureIds::Address => Vec::new(),
        ErasureIds::PersonMemory => {
            let gate = match index {
                0 => plan.secret.gate_key(email),
                _ => plan.secret.for_destination(kind.name()).gate_key(email),
            };
            table
                .remembered_record(&gate)
                .await
                .map_err(run_error)?
                .into_iter()
                .collect()
        }
        ErasureIds::Receipts => {
            let mut ids: Vec<String> = receipts
                .iter()
                .filter_map(|receipt| match receipt.destinations.get(kind.name()) {
                    Some(lane) => lane.record_id.clone(),
                    None if receipt.delivered_to.as_deref() == Some(kind.name()) => {
                        receipt.record_id.clone()
                    }
                    None => None,
                })
                .collect();
            ids.sort();
            ids.dedup();
            ids
        }
    })
}

/// The person's submissions the sender lists in the window, as
/// `<form>/<id>`.
async fn listed_submissions(
    sender_side: &mut SenderSide,
    sender: shared::Sender,
    email: &str,
) -> Result<Vec<String>, String> {
    let SenderSide::Api {
        client,
        forms,
        since,
        until,
    } = sender_side
    else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for form in forms.iter() {
        let listing = client
            .list(form, *since, *until, |pages, _| {
                eprintln!(
                    "receipts: forget: {} form {form}: page {pages}",
                    sender.name()
                );
            })
            .await
            .map_err(|error| error.to_string())?;
        for listed in listing.submissions {
            let Ok(submission) = listed.submission(sender) else {
                continue;
            };
            let receipt = Receipt::new(&submission, SystemTime::now());
            if shared::lead::email_of(&receipt).as_deref() == Some(email) {
                found.push(format!("{form}/{}", listed.submission_id));
            }
        }
    }
    Ok(found)
}

/// Why a destination's deletion did not happen, in one line for the
/// step: never the lead's data, never a token.
fn destination_reason(kind: DestinationKind, error: &DestinationError) -> String {
    let title = kind.profile().title;
    let needs = kind.profile().erasure_needs;
    match error {
        DestinationError::Unauthorized { status } if !needs.is_empty() => format!(
            "{title} refused the deletion (HTTP {status}): it needs {needs}; grant it, then run again"
        ),
        DestinationError::Retryable { .. } | DestinationError::NotSent => {
            format!("{title}: {error}; run again")
        }
        other => format!("{title}: {other}"),
    }
}

/// The round this run works on (the newest).
fn round(stored: &mut StoredErasures) -> &mut Round {
    stored
        .erasures
        .rounds
        .last_mut()
        .expect("resume_or_start made one")
}

async fn save(table: &ReceiptsTable, key: &str, stored: &mut StoredErasures) -> Result<(), Failed> {
    if table.save_erasures(key, stored).await.map_err(run_error)? {
        Ok(())
    } else {
        Err(Failed::Run(
            "another run of this erasure saved its progress meanwhile: nothing more was done \
             here; run the command again (or forget --status) to see where it stands"
                .to_owned(),
        ))
    }
}

pub(in crate::commands) async fn everywhere(
    table: &ReceiptsTable,
    leads: Option<&LeadsTable>,
    request: &Request,
    mut plan: Everywhere,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let email = request.email.as_str();
    let id = erasure_id(&plan.secret, email);
    let key = job_key(&id);
    let mut stored = table.erasures(&key).await.map_err(run_error)?;
    let places = places(&plan, request.sender);

    // Find everything first.
    let found: Found = find(table, leads, request).await?;
    describe(&found, leads, request, out);
    // In the stack's order.
    let mut ids: Vec<(DestinationKind, Vec<String>)> = Vec::new();
    for (index, (kind, _)) in plan.destinations.iter().enumerate() {
        let kept = kept_ids(table, &plan, index, *kind, email, &found.receipts).await?;
        ids.push((*kind, kept));
    }
    let sender_place = Place::Sender(request.sender);
    let sender_found = stored
        .erasures
        .rounds
        .last()
        .filter(|round| !round.is_finished())
        .and_then(|round| round.steps.iter().find(|step| step.place == sender_place))
        .is_some_and(|step| step.found || step.is_done());
    let listed = match sender_found {
        true => Ok(Vec::new()),
        false => listed_submissions(&mut plan.sender, request.sender, email).await,
    };

    // Say what will be done.
    let now = format_timestamp(SystemTime::now());
    let resumed = stored
        .erasures
        .rounds
        .last()
        .filter(|round| !round.is_finished());
    let done_before = |place: Place| {
        resumed
            .and_then(|round| round.steps.iter().find(|step| step.place == place))
            .filter(|step| step.is_done())
            .map(said)
    };
    let _ = writeln!(
        out,
        "erasure {id}: {}",
        match resumed {
            Some(round) => format!("resumes {} (what is done stays done)", round.id),
            None => "a new one".to_owned(),
        }
    );
    for (kind, kept) in &ids {
        if kind.profile().erasure.is_empty() {
            continue;
        }
        let place = Place::Destination(*kind);
        // A resumed step deletes what the first run found.
        let kept = resumed
            .and_then(|round| round.steps.iter().find(|step| step.place == place))
            .filter(|step| step.found)
            .map_or(kept, |step| &step.left);
        let _ = match done_before(place) {
            Some(done) => writeln!(out, "  {done}"),
            None => writeln!(
                out,
                "  {place}: {}",
                match kept.len() {
                    0 => "found by the address, then deleted".to_owned(),
                    n => format!("{n} record(s) the stack kept, deleted"),
                }
            ),
        };
    }
    let sender_plan = match (&plan.sender, &listed) {
        _ if done_before(sender_place).is_some() => None,
        (SenderSide::ByHand(what), _) => Some(format!("cannot delete here: do it by hand, {what}")),
        (SenderSide::NotReady(why), _) => Some(format!("not reachable from this run: {why}")),
        (SenderSide::Api { .. }, Ok(_)) if sender_found => {
            Some("what the first run listed, deleted".to_owned())
        }
        (SenderSide::Api { .. }, Ok(listed)) => Some(format!(
            "{} submission(s) of this person listed, deleted",
            listed.len()
        )),
        (SenderSide::Api { .. }, Err(why)) => Some(format!("its list could not be read: {why}")),
    };
    let _ = match (sender_plan, done_before(sender_place)) {
        (Some(plan), _) => writeln!(out, "  {sender_place}: {plan}"),
        (None, Some(done)) => writeln!(out, "  {done}"),
        (None, None) => Ok(()),
    };
    if request.dry_run {
        let _ = writeln!(out, "dry run: nothing was changed");
        return Ok(());
    }
    if request.ask && !confirmed()? {
        return Err(Failed::Run("not confirmed: nothing was changed".to_owned()));
    }

    // Save what was found before the stack's copies, which held the ids,
    // are erased.
    stored.erasures.resume_or_start(&id, &now, &places);
    for (kind, kept) in &ids {
        if let Some(step) = round(&mut stored).step_mut(Place::Destination(*kind)) {
            step.found(kept.clone());
        }
    }
    if let Ok(listed) = &listed {
        if matches!(plan.sender, SenderSide::Api { .. }) && !sender_found {
            if let Some(step) = round(&mut stored).step_mut(sender_place) {
                step.found(listed.clone());
            }
        }
    }
    save(table, &key, &mut stored).await?;

    // The stack.
    if let Some(step) = round(&mut stored)
        .step_mut(Place::Stack)
        .filter(|s| !s.is_done())
    {
        step.found(Vec::new());
        let held = change(table, leads, &found, request, out).await?;
        match held.iter().map(|held| held.until.as_str()).max() {
            None => {
                step.deleted +=
                    u32::try_from(found.receipts.len() + found.gates.len() + found.rows.len())
                        .unwrap_or(u32::MAX);
                step.complete(&now);
            }
            Some(latest) => step.pending(format!(
                "{} receipt(s) were held by a delivery when erased: run again after {latest}",
                held.len()
            )),
        }
        save(table, &key, &mut stored).await?;
    }

    // Each destination.
    for (kind, destination) in &plan.destinations {
        let place = Place::Destination(*kind);
        let Some(step) = round(&mut stored).step_mut(place).filter(|s| !s.is_done()) else {
            continue;
        };
        let record_ids = step.left.clone();
        let answer = destination
            .erase(Person {
                email,
                record_ids: &record_ids,
            })
            .await;
        let now = format_timestamp(SystemTime::now());
        match answer {
            Ok(Forgotten::Deleted(count)) => {
                step.deleted += count;
                step.complete(&now);
            }
            Ok(Forgotten::NotFound | Forgotten::WithTheStack) => step.complete(&now),
            Ok(Forgotten::ByHand(what)) => step.done(
                shared::erasure::plan::Answer::ByHand {
                    what: what.to_owned(),
                },
                &now,
            ),
            Err(error) => step.pending(destination_reason(*kind, &error)),
        }
        if step.is_done() {
            let _ = writeln!(out, "{}", said(step));
        }
        save(table, &key, &mut stored).await?;
    }

    // The sender's copy.
    if let Some(step) = round(&mut stored)
        .step_mut(sender_place)
        .filter(|s| !s.is_done())
    {
        let now = format_timestamp(SystemTime::now());
        match &mut plan.sender {
            SenderSide::ByHand(what) => step.done(
                shared::erasure::plan::Answer::ByHand {
                    what: (*what).to_owned(),
                },
                &now,
            ),
            SenderSide::NotReady(why) => step.pending(why.clone()),
            SenderSide::Api { .. } if !step.found => step.pending(match &listed {
                Err(why) => format!("its list could not be read: {why}"),
                Ok(_) => "its list was not read".to_owned(),
            }),
            SenderSide::Api { client, .. } => {
                let mut by_form: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for target in &step.left {
                    if let Some((form, id)) = target.split_once('/') {
                        by_form
                            .entry(form.to_owned())
                            .or_default()
                            .push(id.to_owned());
                    }
                }
                let mut failed = None;
                for (form, ids) in &by_form {
                    let deleted = client
                        .delete(form, ids, |chunk, gone| {
                            for id in chunk {
                                step.deleted(&format!("{form}/{id}"), gone);
                            }
                        })
                        .await;
                    if let Err(error) = deleted {
                        failed = Some(error.to_string());
                        break;
                    }
                }
                match failed {
                    None if step.left.is_empty() => step.complete(&now),
                    None => step.pending("submissions listed under an unreadable form"),
                    Some(why) => step.pending(format!("{why}; run again")),
                }
            }
        }
        if step.is_done() {
            let _ = writeln!(out, "{}", said(step));
        }
        save(table, &key, &mut stored).await?;
    }

    // Done, or what is left: a destination the stack no longer has is
    // left to the operator, or the erasure could never finish.
    let now = format_timestamp(SystemTime::now());
    round(&mut stored).close_unreachable(&places, &now, |place| match place {
        Place::Destination(kind) => format!(
            "{} (no longer a destination of this stack, so no run reaches it)",
            kind.profile().erasure
        ),
        other => format!("{other}: no run reaches it"),
    });
    let finished = round(&mut stored).finish_if_done(&now);
    save(table, &key, &mut stored).await?;
    let round = round(&mut stored);
    if finished {
        let _ = writeln!(
            out,
            "every step is done; the record (forget --record {}):",
            round.id
        );
        for line in round.record_lines() {
            let _ = writeln!(out, "{line}");
        }
        return Ok(());
    }
    let open: Vec<String> = round.open_steps().map(said).collect();
    let _ = writeln!(out, "not finished; still open:");
    for line in &open {
        let _ = writeln!(out, "  {line}");
    }
    Err(Failed::RunAgainLater(format!(
        "erasure {} is not finished: {} step(s) open; run the same command again to resume \
         (forget --status --id {id} says where it stands)",
        round.id,
        open.len()
    )))
}

/// One step in one line.
fn said(step: &Step) -> String {
    match &step.state {
        shared::erasure::plan::State::Done { answer, .. } => format!("{}: {answer}", step.place),
        shared::erasure::plan::State::Pending { reason } => format!(
            "{}: pending{}",
            step.place,
            reason
                .as_deref()
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_deletion_names_what_the_credential_needs() {
        let refused = DestinationError::Unauthorized { status: 403 };
        let said = destination_reason(DestinationKind::HubSpot, &refused);
        assert!(
            said.contains("HubSpot refused the deletion (HTTP 403): it needs the token's crm.objects.contacts.write scope"),
            "{said}"
        );
        let said = destination_reason(DestinationKind::Zoho, &refused);
        assert!(said.contains("ZohoCRM.modules.ALL"), "{said}");
        let busy = DestinationError::Retryable {
            status: Some(429),
            retry_after: None,
            reason: "rate-limited".into(),
        };
        let said = destination_reason(DestinationKind::Mailchimp, &busy);
        assert!(said.ends_with("; run again"), "{said}");
        for kind in DestinationKind::ALL {
            let profile = kind.profile();
            if kind.profile().erasure_ids == ErasureIds::Address && profile.erasure.is_empty() {
                continue;
            }
            assert!(
                !destination_reason(kind, &refused).is_empty(),
                "{}",
                kind.name()
            );
        }
    }
}
