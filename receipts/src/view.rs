//! How receipts are shown: a readable table, a card, or JSON. Form data
//! (names, emails, messages) only when asked for with `--payload`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use shared::lanes::{Lane, LaneState};
use shared::receipt::parse_timestamp;
use shared::{Receipt, ReceiptStatus};

/// The last error or the failure reason, with the HTTP status.
fn problem(receipt: &Receipt) -> String {
    let (code, status) = match receipt.status {
        ReceiptStatus::Failed => (&receipt.failure_reason, receipt.failure_http_status),
        ReceiptStatus::Refused => (&receipt.refusal, None),
        ReceiptStatus::Duplicate => (&receipt.duplicate_of, None),
        _ => (&receipt.last_error, receipt.last_http_status),
    };
    // Stored by older versions unbounded: never print a CRM's raw text.
    let code = &code.as_deref().map(shared::delivery::bounded_reason);
    match (code, status) {
        (Some(code), Some(status)) if !code.contains(&status.to_string()) => {
            format!("{code} (HTTP {status})")
        }
        (Some(code), _) => code.clone(),
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => String::new(),
    }
}

/// The last column of `list`: a quarantined receipt's spam rule (it has no
/// error), a duplicate's original, a refusal's code, else its last error; for a receipt of several destinations,
/// each one still open (pending or failed) with its own.
fn why_listed(receipt: &Receipt) -> String {
    match (&receipt.status, &receipt.quarantine_rule) {
        (ReceiptStatus::Quarantined, Some(rule)) => format!("spam rule {rule}"),
        // Not an error: the receipt it repeats holds the lead.
        (ReceiptStatus::Duplicate, _) => match &receipt.duplicate_of {
            Some(of) => format!("duplicate of {}", shown_id(of)),
            None => "duplicate".to_owned(),
        },
        (ReceiptStatus::Refused, _) => format!("refused as {}", problem(receipt)),
        _ if !receipt.destinations.is_empty() => {
            let open: Vec<String> = receipt
                .destinations
                .iter()
                .filter(|(_, lane)| matches!(lane.state, LaneState::Pending | LaneState::Failed))
                .map(|(name, lane)| match lane_problem(lane) {
                    problem if problem.is_empty() => format!("{name} open"),
                    problem => format!("{name}: {problem}"),
                })
                .collect();
            open.join("; ")
        }
        _ => problem(receipt),
    }
}

/// A lane's last error, as `problem` says a receipt's.
fn lane_problem(lane: &Lane) -> String {
    let code = lane
        .last_error
        .as_deref()
        .map(shared::delivery::bounded_reason);
    match (code, lane.last_http_status) {
        (Some(code), Some(status)) if !code.contains(&status.to_string()) => {
            format!("{code} (HTTP {status})")
        }
        (Some(code), _) => code,
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => String::new(),
    }
}

/// One destination's lane of a receipt, for its card: its state, record,
/// attempts, last error and next attempt (`when` shows a time).
fn lane_line(lane: &Lane, when: &dyn Fn(&str) -> String) -> String {
    let mut parts = vec![lane.state.as_str().to_owned()];
    if let Some(id) = &lane.record_id {
        parts.push(format!("record {id}"));
    }
    if let Some(url) = &lane.record_url {
        parts.push(url.clone());
    }
    if lane.attempts > 0 {
        let plural = if lane.attempts == 1 { "" } else { "s" };
        parts.push(format!("{} attempt{plural}", lane.attempts));
    }
    let problem = lane_problem(lane);
    if !problem.is_empty() && !lane.state.has_lead() {
        let label = match lane.state {
            LaneState::Refused => "refused as",
            _ => "last error",
        };
        parts.push(format!("{label} {problem}"));
    }
    if lane.state == LaneState::Pending {
        let next = lane
            .next_attempt_at
            .as_deref()
            .map_or("now".to_owned(), when);
        parts.push(format!("next attempt {next}"));
    }
    parts.join(", ")
}

/// The form data of a receipt's payload, or null (none read, delivered, or
/// forgotten).
fn lead_of(receipt: &Receipt) -> Value {
    receipt
        .payload
        .as_deref()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|payload| payload.pointer("/data/formData").cloned())
        .unwrap_or(Value::Null)
}

/// A receipt as JSON: every recorded field but the payload, which appears
/// (as `lead`, the form data) only with `show_lead` (`--payload`).
pub fn json_of(receipt: &Receipt, show_lead: bool) -> Value {
    let mut value = serde_json::to_value(receipt).unwrap_or(Value::Null);
    if let Some(fields) = value.as_object_mut() {
        fields.remove("payload");
        fields.remove("payloadFingerprint");
        if show_lead {
            fields.insert("lead".to_owned(), lead_of(receipt));
        }
    }
    value
}

/// A receipt's key as its submission id, the way `list` names receipts
/// (`staticforms:form.submitted:sub_1` → `sub_1`).
fn shown_id(key: &str) -> &str {
    key.splitn(3, ':').nth(2).unwrap_or(key)
}

/// One line per receipt under a header.
pub fn table(receipts: &[Receipt], show_lead: bool) -> String {
    let mut rows = vec![[
        "SUBMISSION ID".to_owned(),
        "STATUS".to_owned(),
        "RECEIVED".to_owned(),
        "ATTEMPTS".to_owned(),
        "NEXT ATTEMPT".to_owned(),
        "WHY".to_owned(),
    ]];
    for receipt in receipts {
        rows.push([
            receipt.submission_id.clone(),
            receipt.status.as_str().to_owned(),
            receipt.received_at.clone(),
            receipt.attempts.to_string(),
            receipt
                .next_attempt_at
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
            why_listed(receipt),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if show_lead && n > 0 {
            out.push_str(&format!("    lead: {}\n", lead_of(&receipts[n - 1])));
        }
    }
    out
}

/// What the stored routes say of a receipt's form reference
/// (`shared::routes::Routes::route_by_ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteOfForm {
    /// The route that delivers it, as shown (`route "Pricing page"`,
    /// `route #2`): never the form id.
    Routed(String),
    /// No stored route names it: the stack's FieldMap delivers it.
    Unrouted,
    /// The routes could not be read (an operator role held to the
    /// receipts' attributes may not): why, in one line.
    Unknown(String),
}

/// `receipts show`: a card, one labelled line per recorded fact, times as
/// dates with how long ago (or how soon). Form data only with `payload`.
pub fn card(receipt: &Receipt, payload: bool, now: SystemTime, route: &RouteOfForm) -> String {
    let when = |text: &str| match parse_timestamp(text) {
        Some(at) => date_with_distance(at, now),
        None => text.to_owned(),
    };
    let mut lines: Vec<(&str, String)> = vec![
        ("submission", receipt.submission_id.clone()),
        ("key", receipt.pk.clone()),
        ("status", receipt.status.as_str().to_owned()),
        ("received", when(&receipt.received_at)),
    ];
    if receipt.is_imported() {
        lines.push((
            "source",
            "import (the sender's own list: receipts import or the scheduled audit)".to_owned(),
        ));
    }
    if receipt.form_ref.is_some() {
        let form = match route {
            RouteOfForm::Routed(route) => format!("delivered by {route}"),
            RouteOfForm::Unrouted => "no stored route names it (the stack's FieldMap)".to_owned(),
            RouteOfForm::Unknown(why) => format!("unknown: the routes could not be read ({why})"),
        };
        lines.push(("form", form));
    }
    if let Some(rule) = &receipt.quarantine_rule {
        lines.push(("spam rule", rule.clone()));
    }
    if receipt.attempts > 0 {
        lines.push(("attempts", receipt.attempts.to_string()));
    }
    if receipt.unrecorded_claims > 0 {
        // Past one, the receipt is delivered alone (a suspect).
        lines.push((
            "unrecorded",
            format!(
                "{} claims recorded no outcome (a delivery died or could not write)",
                receipt.unrecorded_claims
            ),
        ));
    }
    let optional = [
        ("last attempt", &receipt.last_attempt_at),
        ("next attempt", &receipt.next_attempt_at),
        ("completed", &receipt.completed_at),
        ("failed", &receipt.failed_at),
        ("redriven", &receipt.redriven_at),
        ("erased", &receipt.erased_at),
        ("released", &receipt.released_at),
        ("claimed until", &receipt.claimed_until),
    ];
    for (label, value) in optional {
        if let Some(value) = value {
            lines.push((label, when(value)));
        }
    }
    // A receipt of several destinations says each on its own line below.
    // Only a delivered receipt says where its lead went: a duplicate's is
    // its original's, a refused one's was refused.
    let delivered = receipt.status == ReceiptStatus::Completed;
    if let (Some(destination), true, true) = (
        &receipt.delivered_to,
        receipt.destinations.is_empty(),
        delivered,
    ) {
        lines.push((
            "delivered to",
            delivered_to(destination, receipt.record_id.as_deref()),
        ));
        if let Some(url) = &receipt.record_url {
            lines.push(("link", url.clone()));
        }
    }
    for (name, lane) in &receipt.destinations {
        lines.push(("to", format!("{name}: {}", lane_line(lane, &when))));
    }
    if let Some(notice) = &receipt.notice {
        let when = receipt
            .noticed_at
            .as_deref()
            .map_or(String::new(), |at| format!(" at {at}"));
        lines.push(("notice", format!("{notice}{when}")));
    }
    let problem = problem(receipt);
    if !problem.is_empty() {
        let label = match receipt.status {
            ReceiptStatus::Failed => "reason",
            ReceiptStatus::Refused => "refused as",
            ReceiptStatus::Duplicate => "duplicate of",
            _ => "last error",
        };
        lines.push((label, problem));
    }
    match receipt.expires_at {
        Some(expires_at) => {
            let at = UNIX_EPOCH + Duration::from_secs(expires_at);
            lines.push(("expires (TTL)", date_with_distance(at, now)));
        }
        None => lines.push(("expires (TTL)", "never while not delivered".to_owned())),
    }
    if payload {
        let data = match &receipt.payload {
            Some(_) => lead_of(receipt).to_string(),
            None => "none kept (delivered or erased)".to_owned(),
        };
        lines.push(("form data", data));
    }
    lines
        .into_iter()
        .map(|(label, value)| format!("{label:<14} {value}\n"))
        .collect()
}

/// Where a COMPLETED receipt's lead went: the destination's title and the
/// record the destination named, or why none is kept.
pub(crate) fn delivered_to(destination: &str, record_id: Option<&str>) -> String {
    let title = shared::destination::DestinationKind::parse(destination)
        .map_or(destination, |kind| kind.profile().title);
    match record_id {
        Some(id) => format!("{title}, record {id}"),
        None => format!(
            "{title}; no record id kept (its answer named none, a newer submission of the person \
             held the record, or the record's key is personal data: see docs/operations.md)"
        ),
    }
}

/// `2026-11-30 08:00:00 UTC (3h 2m ago)`, or `(in 5m)` for a future time.
fn date_with_distance(at: SystemTime, now: SystemTime) -> String {
    let date = humantime::format_rfc3339_seconds(at)
        .to_string()
        .replacen('T', " ", 1)
        .replace('Z', " UTC");
    let round = |d: Duration| {
        let secs = d.as_secs();
        // Minutes are enough past an hour; seconds say nothing then.
        let secs = if secs >= 3600 { secs - secs % 60 } else { secs };
        humantime::format_duration(Duration::from_secs(secs)).to_string()
    };
    match now.duration_since(at) {
        Ok(ago) => format!("{date} ({} ago)", round(ago)),
        Err(ahead) => format!("{date} (in {})", round(ahead.duration())),
    }
}

/// Counts by status and the age of the oldest receipt still RECEIVED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    pub by_status: BTreeMap<&'static str, usize>,
    /// In a stack of several destinations: per destination, its lanes
    /// by state (`PENDING`, `WRITTEN`...); empty in a stack of one.
    pub by_destination: BTreeMap<String, BTreeMap<&'static str, usize>>,
    /// RECEIVED but not in the reconciler's queue (stored before it
    /// existed): `receipts redrive --status received` queues them.
    pub received_outside_queue: usize,
    pub oldest_pending_age: Option<Duration>,
    /// Delivered leads whose new-lead notice is not sent yet (the
    /// worker's `PendingNotices`, which alarms when they keep waiting).
    pub notices_waiting: usize,
}

pub fn stats(receipts: &[Receipt], now: SystemTime) -> Stats {
    let mut by_status = BTreeMap::from([
        (ReceiptStatus::Received.as_str(), 0),
        (ReceiptStatus::Completed.as_str(), 0),
        (ReceiptStatus::Failed.as_str(), 0),
        (ReceiptStatus::Erased.as_str(), 0),
        (ReceiptStatus::Quarantined.as_str(), 0),
        (ReceiptStatus::Refused.as_str(), 0),
        (ReceiptStatus::Duplicate.as_str(), 0),
    ]);
    let mut received_outside_queue = 0;
    let mut notices_waiting = 0;
    let mut oldest: Option<SystemTime> = None;
    let mut by_destination: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    for receipt in receipts {
        *by_status.entry(receipt.status.as_str()).or_default() += 1;
        if receipt.notice.as_deref() == Some(shared::notice::PENDING) {
            notices_waiting += 1;
        }
        for (name, lane) in &receipt.destinations {
            *by_destination
                .entry(name.clone())
                .or_default()
                .entry(lane.state.as_str())
                .or_default() += 1;
        }
        if receipt.status == ReceiptStatus::Received {
            if receipt.pending.is_none() {
                received_outside_queue += 1;
            }
            if let Some(at) = parse_timestamp(&receipt.received_at) {
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            }
        }
    }
    Stats {
        by_status,
        by_destination,
        received_outside_queue,
        oldest_pending_age: oldest.map(|at| now.duration_since(at).unwrap_or_default()),
        notices_waiting,
    }
}

impl Stats {
    pub fn json(&self) -> Value {
        json!({
            "byStatus": self.by_status,
            "byDestination": self.by_destination,
            "receivedOutsideQueue": self.received_outside_queue,
            "oldestPendingAgeSeconds": self.oldest_pending_age.map(|age| age.as_secs()),
            "noticesWaiting": self.notices_waiting,
        })
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for (status, count) in &self.by_status {
            out.push_str(&format!("{status:<10} {count}\n"));
        }
        for (destination, states) in &self.by_destination {
            let counts: Vec<String> = states
                .iter()
                .map(|(state, count)| format!("{state} {count}"))
                .collect();
            out.push_str(&format!("{destination}: {}\n", counts.join(", ")));
        }
        let age = self.oldest_pending_age.map_or("-".to_owned(), |age| {
            humantime::format_duration(Duration::from_secs(age.as_secs())).to_string()
        });
        out.push_str(&format!("oldest pending: {age}\n"));
        if self.received_outside_queue > 0 {
            out.push_str(&format!(
                "{} RECEIVED receipt(s) are not in the reconciler's queue: receipts redrive --status received\n",
                self.received_outside_queue
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::FormSubmission;
    use std::time::UNIX_EPOCH;

    /// A double submit reads as what it is: the receipt it repeats, never
    /// an error, never a delivery of its own.
    #[test]
    fn a_duplicate_names_its_original_and_no_delivery() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_100);
        let mut duplicate = receipt("sub_2", ReceiptStatus::Duplicate, 1_800_000_000);
        duplicate.duplicate_of = Some("staticforms:form.submitted:sub_1".into());
        duplicate.delivered_to = Some("http".into());
        let listed = table(std::slice::from_ref(&duplicate), false);
        assert!(listed.contains("duplicate of sub_1"), "{listed}");
        assert!(!listed.contains("ERROR"), "{listed}");
        let card = card_of(&duplicate, now);
        assert!(card.contains("duplicate of"), "{card}");
        assert!(!card.contains("delivered to"), "{card}");
        let mut delivered = receipt("sub_1", ReceiptStatus::Completed, 1_800_000_000);
        delivered.delivered_to = Some("http".into());
        assert!(card_of(&delivered, now).contains("delivered to"));
    }

    #[test]
    fn a_refused_receipt_is_listed_and_counted_with_the_destinations_code() {
        let mut refused = receipt("sub_gone", ReceiptStatus::Refused, 1_800_000_000);
        refused.refusal = Some("Member In Compliance State".into());
        let listed = table(std::slice::from_ref(&refused), false);
        assert!(
            listed.contains("REFUSED") && listed.trim_end().ends_with("Member In Compliance State"),
            "{listed}"
        );
        let counted = stats(&[refused], UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        assert_eq!(counted.by_status.get("REFUSED"), Some(&1));
        assert_eq!(counted.by_status.get("FAILED"), Some(&0));
    }

    #[test]
    fn a_quarantined_receipt_is_listed_with_its_rule() {
        let mut held = receipt("sub_bot", ReceiptStatus::Quarantined, 1_800_000_000);
        held.quarantine_rule = Some("honeypot:fax".into());
        let listed = table(&[held], false);
        assert!(
            listed.contains("QUARANTINED") && listed.trim_end().ends_with("spam rule honeypot:fax"),
            "{listed}"
        );
    }

    #[test]
    fn a_delivered_card_says_where_the_lead_went() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_060);
        let mut delivered = receipt("sub_1", ReceiptStatus::Completed, 1_800_000_000);
        let line = |label: &str, value: &str| format!("{label:<14} {value}\n");
        let rows: &[(&str, Option<&str>, Option<&str>, &str)] = &[
            ("hubspot", Some("12345"), None, "HubSpot, record 12345"),
            (
                "salesforce",
                Some("00Q1"),
                Some("https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view"),
                "Salesforce, record 00Q1",
            ),
            (
                "http",
                Some("lead-7"),
                None,
                "Your CRM (http), record lead-7",
            ),
            (
                "dynamodb",
                Some("submission#sub_1"),
                None,
                "The leads table, record submission#sub_1",
            ),
        ];
        for (destination, id, url, shown) in rows {
            delivered.delivered_to = Some((*destination).to_owned());
            delivered.record_id = id.map(str::to_owned);
            delivered.record_url = url.map(str::to_owned);
            let card = card(&delivered, false, now, &RouteOfForm::Unrouted);
            assert!(card.contains(&line("delivered to", shown)), "{card}");
            match url {
                Some(url) => assert!(card.contains(&line("link", url)), "{card}"),
                None => assert!(!card.contains("link "), "{card}"),
            }
            let json = json_of(&delivered, false);
            assert_eq!(json["deliveredTo"], *destination);
            assert_eq!(json["recordId"].as_str(), *id);
        }
        delivered.record_id = None;
        delivered.delivered_to = Some("dynamodb".into());
        let card = card(&delivered, false, now, &RouteOfForm::Unrouted);
        assert!(
            card.contains("delivered to   The leads table; no record id kept ("),
            "{card}"
        );
        let waiting = receipt("sub_2", ReceiptStatus::Received, 1_800_000_000);
        assert!(!card_of(&waiting, now).contains("delivered to"));
        assert!(
            !card.contains("notice"),
            "no notice line without a notice URL"
        );
        delivered.notice = Some("SENT".into());
        delivered.noticed_at = Some("2027-01-15T08:00:01.000Z".into());
        let noticed = card_of(&delivered, now);
        assert!(
            noticed.contains(&line("notice", "SENT at 2027-01-15T08:00:01.000Z")),
            "{noticed}"
        );
    }

    #[test]
    fn a_receipt_of_several_destinations_shows_each_and_lists_the_open_ones() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut receipt = receipt("sub_two", ReceiptStatus::Received, 1_800_000_000 - 60);
        receipt.delivered_to = Some("hubspot".into());
        receipt.destinations.insert(
            "hubspot".into(),
            Lane {
                state: LaneState::Written,
                attempts: 1,
                record_id: Some("101".into()),
                record_url: Some("https://app.hubspot.com/contacts/1/record/0-1/101".into()),
                ..Lane::pending()
            },
        );
        receipt.destinations.insert(
            "mailchimp".into(),
            Lane {
                state: LaneState::Pending,
                attempts: 3,
                last_error: Some("http-503".into()),
                last_http_status: Some(503),
                next_attempt_at: Some("2027-01-15T08:05:00.000Z".into()),
                ..Lane::pending()
            },
        );
        let card = card_of(&receipt, now);
        assert!(
            card.contains("to             hubspot: WRITTEN, record 101, https://app.hubspot.com/contacts/1/record/0-1/101, 1 attempt\n"),
            "{card}"
        );
        assert!(
            card.contains("to             mailchimp: PENDING, 3 attempts, last error http-503, next attempt 2027-01-15 08:05:00 UTC (in 5m)\n"),
            "{card}"
        );
        assert!(
            !card.contains("delivered to"),
            "each destination says it: {card}"
        );
        let counted = stats(std::slice::from_ref(&receipt), now);
        let text = counted.text();
        assert!(
            text.contains("hubspot: WRITTEN 1\nmailchimp: PENDING 1\n"),
            "{text}"
        );
        assert_eq!(counted.json()["byDestination"]["mailchimp"]["PENDING"], 1);
        let listed = table(&[receipt], false);
        assert!(listed.contains("mailchimp: http-503"), "{listed}");
        assert!(!listed.contains("hubspot"), "only the open ones: {listed}");
    }

    fn card_of(receipt: &Receipt, now: SystemTime) -> String {
        card(receipt, false, now, &RouteOfForm::Unrouted)
    }

    fn receipt(id: &str, status: ReceiptStatus, received: u64) -> Receipt {
        let body = json!({
            "event": "form.submitted",
            "data": {"submissionId": id, "formData": {"name": "Ada Lovelace", "email": "ada@example.com"}}
        });
        let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
        let mut receipt = Receipt::new(&submission, UNIX_EPOCH + Duration::from_secs(received));
        receipt.status = status;
        receipt
    }

    #[test]
    fn form_data_only_when_asked() {
        let mut failed = receipt("sub_1", ReceiptStatus::Failed, 1_800_000_000);
        failed.failure_reason = Some("HTTP 400".into());
        failed.failure_http_status = Some(400);
        let mut waiting = receipt("sub_2", ReceiptStatus::Received, 1_800_000_000);
        waiting.attempts = 3;
        waiting.last_error = Some("destination-auth".into());
        waiting.last_http_status = Some(401);
        let receipts = [failed, waiting];

        let plain = table(&receipts, false);
        assert!(
            !plain.contains("Ada") && !plain.contains("ada@example.com"),
            "{plain}"
        );
        assert!(
            plain.contains("sub_1") && plain.contains("HTTP 400\n"),
            "{plain}"
        );
        assert!(plain.contains("destination-auth (HTTP 401)"), "{plain}");
        let shown = table(&receipts, true);
        assert!(shown.contains("ada@example.com"), "{shown}");

        let json = json_of(&receipts[1], false).to_string();
        assert!(!json.contains("Ada") && !json.contains("payload"), "{json}");
        assert!(json_of(&receipts[1], true)["lead"]["email"] == "ada@example.com");
        let now = UNIX_EPOCH + Duration::from_secs(1_800_003_720);
        let card_plain = card(&receipts[1], false, now, &RouteOfForm::Unrouted);
        assert!(!card_plain.contains("Ada"), "{card_plain}");
        assert!(
            card_plain.contains("received       2027-01-15 08:00:00 UTC (1h 2m ago)\n"),
            "{card_plain}"
        );
        assert!(card_plain.contains("attempts       3\n"), "{card_plain}");
        assert!(
            card_plain.contains("last error     destination-auth (HTTP 401)\n"),
            "{card_plain}"
        );
        assert!(
            card_plain.contains("expires (TTL)  never while not delivered\n"),
            "{card_plain}"
        );
        let mut delivered = receipts[1].clone();
        delivered.status = ReceiptStatus::Completed;
        delivered.expires_at = Some(1_802_592_000);
        assert!(
            card(&delivered, false, now, &RouteOfForm::Unrouted)
                .contains("expires (TTL)  2027-02-14 08:00:00 UTC (in 29days 22h 58m)"),
            "{}",
            card(&delivered, false, now, &RouteOfForm::Unrouted)
        );
        let card_shown = card(&receipts[1], true, now, &RouteOfForm::Unrouted);
        assert!(
            card_shown.contains("form data") && card_shown.contains("ada@example.com"),
            "{card_shown}"
        );
    }

    #[test]
    fn the_card_says_where_a_receipt_came_from_and_who_holds_it() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_060);
        let line = |label: &str, value: &str| format!("{label:<14} {value}\n");
        let plain = receipt("sub_1", ReceiptStatus::Received, 1_800_000_000);
        let card_plain = card(&plain, false, now, &RouteOfForm::Unrouted);
        for label in ["source", "form", "unrecorded", "claimed until"] {
            assert!(
                !card_plain.contains(&format!("{label:<14} ")),
                "{label}: {card_plain}"
            );
        }

        let mut held = plain.clone();
        held.source = Some(shared::receipt::IMPORTED.to_owned());
        held.form_ref = Some(shared::routes::form_ref("contact"));
        held.unrecorded_claims = 2;
        held.claimed_until = Some("2027-01-15T08:02:00.000Z".to_owned());
        let routed = card(
            &held,
            false,
            now,
            &RouteOfForm::Routed("route \"Contact\"".to_owned()),
        );
        for expected in [
            line(
                "source",
                "import (the sender's own list: receipts import or the scheduled audit)",
            ),
            line("form", "delivered by route \"Contact\""),
            line(
                "unrecorded",
                "2 claims recorded no outcome (a delivery died or could not write)",
            ),
            line("claimed until", "2027-01-15 08:02:00 UTC (in 1m)"),
        ] {
            assert!(routed.contains(&expected), "{expected}in {routed}");
        }
        assert!(
            card(&held, false, now, &RouteOfForm::Unrouted).contains(&line(
                "form",
                "no stored route names it (the stack's FieldMap)"
            )),
            "a form reference no route names"
        );
        let unknown = RouteOfForm::Unknown("AccessDeniedException".to_owned());
        assert!(
            card(&held, false, now, &unknown).contains(&line(
                "form",
                "unknown: the routes could not be read (AccessDeniedException)"
            )),
            "routes an operator may not read still give a card"
        );
    }

    #[test]
    fn counts_and_the_oldest_pending_age() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_003_600);
        let mut legacy = receipt("sub_4", ReceiptStatus::Received, 1_800_001_800);
        legacy.pending = None;
        let receipts = [
            receipt("sub_1", ReceiptStatus::Completed, 1_700_000_000),
            receipt("sub_2", ReceiptStatus::Received, 1_800_000_000),
            receipt("sub_3", ReceiptStatus::Failed, 1_800_000_000),
            legacy,
        ];
        let stats = stats(&receipts, now);
        assert_eq!(
            stats.by_status,
            BTreeMap::from([
                ("COMPLETED", 1),
                ("ERASED", 0),
                ("FAILED", 1),
                ("RECEIVED", 2),
                ("QUARANTINED", 0),
                ("REFUSED", 0),
                ("DUPLICATE", 0)
            ]),
            "every status, zero included"
        );
        assert_eq!(stats.received_outside_queue, 1);
        assert_eq!(stats.oldest_pending_age, Some(Duration::from_secs(3600)));
        assert!(
            stats.text().contains("oldest pending: 1h"),
            "{}",
            stats.text()
        );
        assert_eq!(stats.json()["oldestPendingAgeSeconds"], 3600);
    }
}
