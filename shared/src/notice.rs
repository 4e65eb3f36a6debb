//! The new-lead notice: one JSON POST to the stack's notice URL (a Slack or
//! Microsoft Teams incoming webhook, or any URL taking JSON) for each lead
//! written to the CRM, saying which form, when, where the record is and
//! which receipt, and nothing the person wrote: no name, no address, no
//! answer. The worker keeps its state on the receipt (`notice`), so a
//! notice is sent once, after the lead is written, and a failed one is
//! sent again by later passes without touching the CRM again.

use serde_json::{json, Map, Value};

use crate::lead::Lead;

/// The notice URL itself (local use and tests).
pub const NOTIFY_URL: &str = "NOTIFY_URL";
/// The Secrets Manager secret holding it (a deployed stack).
pub const NOTIFY_URL_SECRET_ARN: &str = "NOTIFY_URL_SECRET_ARN";

/// A receipt's `notice` while its notice waits to be sent (it is then in
/// the queue index's [`crate::receipt::NOTICE`] partition).
pub const PENDING: &str = "PENDING";
/// The endpoint accepted it.
pub const SENT: &str = "SENT";
/// It was sent, or may have been, and no answer was recorded (the
/// endpoint did not answer in time, or the worker stopped between the
/// request and its record): never sent again, so no lead is announced
/// twice; the log and `receipts show` say so.
pub const UNCONFIRMED: &str = "UNCONFIRMED";

/// What a notice says: nothing the person wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts<'a> {
    /// The form's route name, when its route has one.
    pub form: Option<&'a str>,
    /// When the receipt was stored (RFC 3339).
    pub received_at: &'a str,
    /// Where the lead is: its destination, or each of several that has
    /// it, with the record there.
    pub destinations: &'a [Placed<'a>],
    /// The receipt's key (`receipts show` takes its submission id).
    pub receipt: &'a str,
    /// The answers the form's route names (`notify_fields`); none by
    /// default.
    pub fields: Option<&'a Map<String, Value>>,
}

/// One destination that has the lead, and its record there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed<'a> {
    /// The destination's catalog name (`hubspot`).
    pub destination: &'a str,
    pub record_id: Option<&'a str>,
    pub record_url: Option<&'a str>,
}

impl Placed<'_> {
    /// `hubspot https://…`, `hubspot (record 901)` or `hubspot`.
    fn said(&self) -> String {
        match (self.record_id, self.record_url) {
            (_, Some(url)) => format!("{} {url}", self.destination),
            (Some(id), None) => format!("{} (record {id})", self.destination),
            (None, None) => self.destination.to_owned(),
        }
    }
}

/// The answers a route names for its notice, by the names it gives them
/// (`notify_fields`: a field's name, label, key or ref, or `name`,
/// `email`, `message`); those the lead does not hold are left out. `None`
/// when the route names none.
pub fn named_answers(lead: &Lead, names: &[String]) -> Option<Map<String, Value>> {
    if names.is_empty() {
        return None;
    }
    let answers = names
        .iter()
        .filter_map(|name| {
            let answer = match name.as_str() {
                "name" => Some(Value::from(lead.name.as_str())),
                "email" => Some(Value::from(lead.email.as_str())),
                "message" => Some(Value::from(lead.message.as_str())),
                other => lead.answer(other).cloned(),
            };
            Some((name.clone(), answer?))
        })
        .collect();
    Some(answers)
}

/// What a waiting notice keeps on its receipt (`noticeFields`, personal
/// data, until the notice is sent): the answers its route names, and the
/// key of its person's erasure marker (`erasure::marker_key`, a pseudonym),
/// so that a notice sent after `receipts forget` erased them carries none
/// of their answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingAnswers {
    pub answers: Map<String, Value>,
    pub person: Option<String>,
}

impl WaitingAnswers {
    /// As stored: `{"answers": {...}, "person": "erased#hmac:..."}`.
    pub fn to_stored(&self) -> String {
        let mut stored = json!({"answers": self.answers});
        if let Some(person) = &self.person {
            stored["person"] = Value::from(person.as_str());
        }
        stored.to_string()
    }

    /// From `noticeFields` as stored, or as an earlier version stored it
    /// (the answers alone, no person).
    pub fn from_stored(text: &str) -> Option<WaitingAnswers> {
        let Value::Object(mut stored) = serde_json::from_str(text).ok()? else {
            return None;
        };
        match (stored.remove("answers"), stored.remove("person")) {
            (Some(Value::Object(answers)), person) if stored.is_empty() => Some(WaitingAnswers {
                answers,
                person: person.and_then(|p| p.as_str().map(str::to_owned)),
            }),
            (answers, person) => {
                // An earlier version's: every key an answer.
                if let Some(answers) = answers {
                    stored.insert("answers".to_owned(), answers);
                }
                if let Some(person) = person {
                    stored.insert("person".to_owned(), person);
                }
                Some(WaitingAnswers {
                    answers: stored,
                    person: None,
                })
            }
        }
    }
}

/// The JSON body: `text` for chat webhooks (Slack and Teams read it),
/// `lead` with the same facts for any other endpoint.
pub fn body(facts: &Facts<'_>) -> Value {
    let form = facts
        .form
        .map_or_else(|| "a form".to_owned(), |name| format!("{name:?}"));
    let places: Vec<String> = facts.destinations.iter().map(Placed::said).collect();
    let place = match places.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, others)) => format!("{} and {last}", others.join(", ")),
        None => "its destination".to_owned(),
    };
    let first = facts.destinations.first();
    let answers = facts.fields.map_or(String::new(), |fields| {
        fields
            .iter()
            .map(|(name, value)| match value {
                Value::String(text) => format!(" {name}: {text}."),
                other => format!(" {name}: {other}."),
            })
            .collect()
    });
    let text = format!(
        "New lead from {form}, received {}, in {place}.{answers} Receipt {}.",
        facts.received_at, facts.receipt
    );
    let destinations: Vec<Value> = facts
        .destinations
        .iter()
        .map(|placed| {
            json!({
                "destination": placed.destination,
                "recordId": placed.record_id,
                "recordUrl": placed.record_url,
            })
        })
        .collect();
    json!({
        "text": text,
        "lead": {
            "form": facts.form,
            "receivedAt": facts.received_at,
            // The first destination's, as before several could be named.
            "destination": first.map(|placed| placed.destination),
            "recordId": first.and_then(|placed| placed.record_id),
            "recordUrl": first.and_then(|placed| placed.record_url),
            "destinations": destinations,
            "receipt": facts.receipt,
            "fields": facts.fields,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_answers_keep_their_person_and_read_an_earlier_versions() {
        let mut answers = Map::new();
        answers.insert("plan".into(), Value::from("Pro"));
        let waiting = WaitingAnswers {
            answers: answers.clone(),
            person: Some("erased#hmac:ab12".into()),
        };
        assert_eq!(
            WaitingAnswers::from_stored(&waiting.to_stored()),
            Some(waiting)
        );
        let earlier = WaitingAnswers::from_stored(r#"{"plan":"Pro"}"#).unwrap();
        assert_eq!((earlier.answers, earlier.person), (answers, None));
        // A route that names a field called "answers": an earlier value.
        let odd = WaitingAnswers::from_stored(r#"{"answers":"yes","plan":"Pro"}"#).unwrap();
        assert_eq!(odd.answers.len(), 2);
        assert_eq!(WaitingAnswers::from_stored("not json"), None);
    }

    #[test]
    fn a_notice_says_where_the_lead_is_and_nothing_the_person_wrote() {
        let hubspot = Placed {
            destination: "hubspot",
            record_id: Some("901"),
            record_url: Some("https://app.hubspot.com/contacts/1/record/0-1/901"),
        };
        let by_id = [Placed {
            record_url: None,
            ..hubspot
        }];
        let bare = [Placed {
            record_url: None,
            record_id: None,
            ..hubspot
        }];
        let linked = [hubspot];
        let several = [
            hubspot,
            Placed {
                destination: "mailchimp",
                record_id: Some("7"),
                record_url: None,
            },
            Placed {
                destination: "dynamodb",
                record_id: None,
                record_url: None,
            },
        ];
        let facts = Facts {
            form: Some("Pricing page"),
            received_at: "2026-12-04T10:00:00.000Z",
            destinations: &linked,
            receipt: "staticforms:form.submitted:sub_1",
            fields: None,
        };
        let rows: [(Facts, &str); 4] = [
            (
                facts,
                "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot https://app.hubspot.com/contacts/1/record/0-1/901. Receipt staticforms:form.submitted:sub_1.",
            ),
            (
                Facts { destinations: &by_id, form: None, ..facts },
                "New lead from a form, received 2026-12-04T10:00:00.000Z, in hubspot (record 901). Receipt staticforms:form.submitted:sub_1.",
            ),
            (
                Facts { destinations: &bare, ..facts },
                "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot. Receipt staticforms:form.submitted:sub_1.",
            ),
            (
                Facts { destinations: &several, ..facts },
                "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot https://app.hubspot.com/contacts/1/record/0-1/901, mailchimp (record 7) and dynamodb. Receipt staticforms:form.submitted:sub_1.",
            ),
        ];
        for (facts, text) in rows {
            let body = body(&facts);
            assert_eq!(body["text"], text);
            assert_eq!(body["lead"]["receipt"], facts.receipt);
            assert_eq!(body["lead"]["fields"], Value::Null);
            assert_eq!(body.as_object().unwrap().len(), 2, "text and lead only");
            assert_eq!(
                body["lead"]["destination"], "hubspot",
                "the first, as before"
            );
            assert_eq!(
                body["lead"]["destinations"].as_array().map(Vec::len),
                Some(facts.destinations.len())
            );
        }
        let named = json!({"plan": "Pro", "seats": 12});
        let with = body(&Facts {
            fields: named.as_object(),
            destinations: &by_id,
            ..facts
        });
        assert_eq!(
            with["text"],
            "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot (record 901). plan: Pro. seats: 12. Receipt staticforms:form.submitted:sub_1."
        );
        assert_eq!(with["lead"]["fields"], named);
    }

    #[test]
    fn a_route_names_the_answers_its_notice_carries_and_nothing_else() {
        let lead = Lead {
            external_id: "sub_1".into(),
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            message: "Call me".into(),
            fields: json!({"plan": "Pro"}).as_object().cloned().unwrap(),
            aliases: vec![("question_3".into(), "plan".into())],
            received_at: "2026-12-04T08:00:00.000Z".into(),
            submitted_at: None,
            sender_time_replaced: false,
            route: None,
        };
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(named_answers(&lead, &[]), None);
        assert_eq!(
            named_answers(&lead, &names(&["plan", "question_3", "missing", "name"])),
            json!({"plan": "Pro", "question_3": "Pro", "name": lead.name})
                .as_object()
                .cloned()
        );
    }
}
