//! An erasure everywhere (`receipts forget --everywhere`) as steps, one
//! per place that may hold the person: the stack itself, each destination
//! of the stack, the sender's own copy. Each step keeps its own state, so
//! a run cut off halfway (a crash, a CRM's 5xx or 429) leaves the finished
//! steps done, and the next run does only what is left.
//!
//! The progress and the record are one item of the receipts table, keyed
//! by the erasure's id: a pseudonym of the person under the stack's gate
//! key ([`erasure_id`]), so a second run for the same address finds the
//! first, and nothing in the item names the person. While a step is open
//! it keeps what is left to delete there (record or submission ids, never
//! an address); a step that is done keeps only what the place answered.
//! A person erased again later (they came back, and asked again) gets a
//! new round under the same item: every round's record stays.
//!
//! Pure: the runs, the calls and the storage are the CLI's.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::destination::DestinationKind;
use crate::keys::ERASURE_JOB_KEY_PREFIX;
use crate::newest::GateSecret;
use crate::Sender;

/// Hex digits of an erasure's id: 80 bits, no collision among any stack's
/// erasures, short enough to read out.
pub const ID_HEX_DIGITS: usize = 20;

/// The id of every erasure of one person: the first [`ID_HEX_DIGITS`] of
/// the HMAC-SHA256 of `forget:` and the normalised address under the
/// stack's gate key (its own domain: neither the person's gate nor their
/// marker).
pub fn erasure_id(secret: &GateSecret, normalised_email: &str) -> String {
    let mut hex = secret.hmac_hex(&["forget:", normalised_email]);
    hex.truncate(ID_HEX_DIGITS);
    hex
}

/// The item that keeps an erasure's rounds.
pub fn job_key(erasure_id: &str) -> String {
    format!("{ERASURE_JOB_KEY_PREFIX}{erasure_id}")
}

/// An id as the operator gives it (`--record`, `--status --id`): the
/// erasure's (its newest round) or one round's (`<erasure id>-<n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedId {
    pub erasure: String,
    pub round: Option<u32>,
}

impl AskedId {
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        let (erasure, round) = match raw.split_once('-') {
            Some((erasure, n)) => (erasure, Some(n.parse().ok().filter(|n| *n > 0)?)),
            None => (raw, None),
        };
        let hex = erasure.len() == ID_HEX_DIGITS
            && erasure
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        hex.then(|| AskedId {
            erasure: erasure.to_owned(),
            round,
        })
    }
}

/// A place that may hold the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Place {
    /// The receipts, gates, person memories and leads table of the stack.
    Stack,
    Destination(DestinationKind),
    Sender(Sender),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Stack => f.write_str("stack"),
            Place::Destination(kind) => write!(f, "destination {}", kind.name()),
            Place::Sender(sender) => write!(f, "sender {}", sender.name()),
        }
    }
}

impl From<Place> for String {
    fn from(place: Place) -> String {
        place.to_string()
    }
}

impl TryFrom<String> for Place {
    type Error = String;

    fn try_from(raw: String) -> Result<Self, String> {
        let unknown = || format!("unknown place {raw:?}");
        match raw.split_once(' ') {
            None if raw == "stack" => Ok(Place::Stack),
            Some(("destination", name)) => DestinationKind::parse(name)
                .map(Place::Destination)
                .ok_or_else(unknown),
            Some(("sender", name)) => Sender::parse(name).map(Place::Sender).ok_or_else(unknown),
            _ => Err(unknown()),
        }
    }
}

/// What a place answered, once its step is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Answer {
    /// This many things of the person were deleted there.
    Deleted { count: u32 },
    /// Nothing of the person was there (or it was deleted before).
    NotFound,
    /// It cannot be deleted from here: what the operator must do there.
    ByHand { what: String },
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Deleted { count } => write!(f, "deleted ({count})"),
            Answer::NotFound => f.write_str("not found (nothing of this person there)"),
            Answer::ByHand { what } => write!(f, "cannot delete here: do it by hand, {what}"),
        }
    }
}

/// Where one step stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum State {
    /// Not done yet; why, when a run tried and stopped.
    Pending {
        reason: Option<String>,
    },
    Done {
        answer: Answer,
        at: String,
    },
}

/// One place's part of a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub place: Place,
    #[serde(flatten)]
    pub state: State,
    /// What is still to delete there, found by the first run (record ids,
    /// submission ids): a later run finds them here after the stack's own
    /// copies are gone. Never an address; emptied when the step is done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<String>,
    /// Whether `left` was found (an empty one then means: nothing there).
    #[serde(default)]
    pub found: bool,
    /// Deleted so far.
    #[serde(default)]
    pub deleted: u32,
}

impl Step {
    fn new(place: Place) -> Self {
        Step {
            place,
            state: State::Pending { reason: None },
            left: Vec::new(),
            found: false,
            deleted: 0,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done { .. })
    }

    /// What is to delete there, once found; kept for later runs.
    pub fn found(&mut self, targets: Vec<String>) {
        if !self.found {
            self.left = targets;
            self.found = true;
        }
    }

    /// `target` deleted there (`gone`), or not there any more: either way
    /// not to be deleted again.
    pub fn deleted(&mut self, target: &str, gone: bool) {
        if let Some(at) = self.left.iter().position(|left| left == target) {
            self.left.remove(at);
            if gone {
                self.deleted += 1;
            }
        }
    }

    /// Done: deleted what was found, or found nothing.
    pub fn complete(&mut self, at: &str) {
        let answer = match self.deleted {
            0 => Answer::NotFound,
            count => Answer::Deleted { count },
        };
        self.done(answer, at);
    }

    pub fn done(&mut self, answer: Answer, at: &str) {
        self.left.clear();
        self.state = State::Done {
            answer,
            at: at.to_owned(),
        };
    }

    /// Still open, for `reason` (one line, never personal data).
    pub fn pending(&mut self, reason: impl Into<String>) {
        self.state = State::Pending {
            reason: Some(reason.into()),
        };
    }
}

/// One erasure of the person: asked once, run until every step is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Round {
    /// `<erasure id>-<n>`.
    pub id: String,
    pub asked_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub steps: Vec<Step>,
}

impl Round {
    pub fn is_finished(&self) -> bool {
        self.finished_at.is_some()
    }

    pub fn step_mut(&mut self, place: Place) -> Option<&mut Step> {
        self.steps.iter_mut().find(|step| step.place == place)
    }

    pub fn open_steps(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().filter(|step| !step.is_done())
    }

    /// Each open step of a place this run cannot reach (a destination the
    /// stack no longer has) done at `now`: what `by_hand` says to do there.
    /// Left open, it would keep the erasure from ever finishing.
    pub fn close_unreachable(
        &mut self,
        reachable: &[Place],
        now: &str,
        by_hand: impl Fn(Place) -> String,
    ) {
        for step in self.steps.iter_mut() {
            if !step.is_done() && !reachable.contains(&step.place) {
                let what = by_hand(step.place);
                step.done(Answer::ByHand { what }, now);
            }
        }
    }

    /// Finished at `now` when every step is done.
    pub fn finish_if_done(&mut self, now: &str) -> bool {
        if self.finished_at.is_none() && self.steps.iter().all(Step::is_done) {
            self.finished_at = Some(now.to_owned());
        }
        self.is_finished()
    }

    /// The record, one line each: what the operator keeps.
    pub fn record_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("erasure {}", self.id),
            format!("asked    {}", self.asked_at),
            format!(
                "finished {}",
                self.finished_at.as_deref().unwrap_or("not yet")
            ),
        ];
        for step in &self.steps {
            lines.push(match &step.state {
                State::Done { answer, at } => format!("  {}: {answer} at {at}", step.place),
                State::Pending { reason } => format!(
                    "  {}: pending{}",
                    step.place,
                    reason
                        .as_deref()
                        .map(|reason| format!(" ({reason})"))
                        .unwrap_or_default()
                ),
            });
        }
        lines
    }
}

/// Every erasure of one person, oldest first: the item's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Erasures {
    pub rounds: Vec<Round>,
}

impl Erasures {
    /// The round a run works on: the newest while it is unfinished (a
    /// place it lacks is added, pending), else a new one asked `now`.
    /// Whether it is a new round is said beside it.
    pub fn resume_or_start(
        &mut self,
        erasure_id: &str,
        now: &str,
        places: &[Place],
    ) -> (&mut Round, bool) {
        let resumes = self.rounds.last().is_some_and(|round| !round.is_finished());
        if !resumes {
            self.rounds.push(Round {
                id: format!("{erasure_id}-{}", self.rounds.len() + 1),
                asked_at: now.to_owned(),
                finished_at: None,
                steps: Vec::new(),
            });
        }
        let round = self
            .rounds
            .last_mut()
            .expect("a round was just found or pushed");
        for place in places {
            if round.step_mut(*place).is_none() {
                round.steps.push(Step::new(*place));
            }
        }
        (round, !resumes)
    }

    /// The round `asked` names: its own, or the newest.
    pub fn round(&self, asked: &AskedId) -> Option<&Round> {
        match asked.round {
            None => self.rounds.last(),
            Some(n) => {
                let wanted = format!("{}-{n}", asked.erasure);
                self.rounds.iter().find(|round| round.id == wanted)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> GateSecret {
        GateSecret::new(&"k".repeat(GateSecret::MIN_LEN)).unwrap()
    }

    #[test]
    fn an_erasures_id_is_a_pseudonym_of_its_own() {
        let id = erasure_id(&secret(), "ada@example.com");
        assert_eq!(id.len(), ID_HEX_DIGITS);
        assert_eq!(id, erasure_id(&secret(), "ada@example.com"), "stable");
        assert_ne!(id, erasure_id(&secret(), "bob@example.com"));
        let marker = super::super::marker_key(&secret(), "ada@example.com");
        assert!(!marker.contains(&id), "not the marker's");
        assert!(!secret().gate_key("ada@example.com").contains(&id));
        assert_eq!(job_key(&id), format!("forget#{id}"));
        assert!(!crate::receipt::is_receipt_key(&job_key(&id)));
    }

    #[test]
    fn asked_ids() {
        let id = "0123456789abcdef0123";
        let rows = [
            (id.to_owned(), Some((id, None))),
            (format!("{id}-2"), Some((id, Some(2)))),
            (format!(" {id}-1 "), Some((id, Some(1)))),
            (format!("{id}-0"), None),
            (format!("{id}-x"), None),
            ("0123456789ABCDEF0123".to_owned(), None),
            ("0123".to_owned(), None),
            ("ada@example.com".to_owned(), None),
            (String::new(), None),
        ];
        for (raw, expected) in rows {
            let got = AskedId::parse(&raw);
            let expected = expected.map(|(erasure, round)| AskedId {
                erasure: erasure.to_owned(),
                round,
            });
            assert_eq!(got, expected, "{raw:?}");
        }
    }

    #[test]
    fn places_read_back_as_written() {
        let places = [
            Place::Stack,
            Place::Destination(DestinationKind::HubSpot),
            Place::Sender(Sender::Typeform),
        ];
        for place in places {
            assert_eq!(Place::try_from(String::from(place)), Ok(place));
        }
        assert!(Place::try_from("destination nowhere".to_owned()).is_err());
        assert!(Place::try_from("crm".to_owned()).is_err());
    }

    #[test]
    fn a_run_resumes_the_open_round_and_a_finished_one_starts_another() {
        let places = [
            Place::Stack,
            Place::Destination(DestinationKind::HubSpot),
            Place::Sender(Sender::Typeform),
        ];
        let mut erasures = Erasures::default();
        let (round, new) = erasures.resume_or_start("e", "t1", &places);
        assert!(new);
        assert_eq!(round.id, "e-1");
        round.step_mut(Place::Stack).unwrap().complete("t1");
        let typeform = round.step_mut(Place::Sender(Sender::Typeform)).unwrap();
        typeform.found(vec!["r1".into(), "r2".into()]);
        typeform.deleted("r1", true);
        typeform.deleted("r2", true);
        typeform.complete("t1");
        round
            .step_mut(Place::Destination(DestinationKind::HubSpot))
            .unwrap()
            .pending("HubSpot answered HTTP 503");
        assert!(!round.finish_if_done("t1"));
        assert_eq!(round.open_steps().count(), 1);

        // Stored and read back, then resumed: the done steps stay done.
        let stored = serde_json::to_string(&erasures).unwrap();
        let mut erasures: Erasures = serde_json::from_str(&stored).unwrap();
        let (round, new) = erasures.resume_or_start("e", "t2", &places);
        assert!(!new);
        assert_eq!(round.asked_at, "t1");
        assert_eq!(
            round.steps.iter().map(|s| s.is_done()).collect::<Vec<_>>(),
            [true, false, true]
        );
        let hubspot = round
            .step_mut(Place::Destination(DestinationKind::HubSpot))
            .unwrap();
        hubspot.found(vec!["501".into()]);
        hubspot.deleted("501", true);
        hubspot.complete("t2");
        assert!(round.finish_if_done("t2"));
        assert_eq!(round.finished_at.as_deref(), Some("t2"));

        let (round, new) = erasures.resume_or_start("e", "t3", &places);
        assert!(new, "a finished erasure is not resumed");
        assert_eq!(round.id, "e-2");
        assert_eq!(erasures.rounds.len(), 2);
        let newest = AskedId {
            erasure: "e".into(),
            round: None,
        };
        assert_eq!(erasures.round(&newest).unwrap().id, "e-2");
        let first = AskedId {
            erasure: "e".into(),
            round: Some(1),
        };
        assert_eq!(erasures.round(&first).unwrap().asked_at, "t1");
    }

    #[test]
    fn what_is_found_once_is_kept_and_what_is_deleted_is_not_deleted_again() {
        let mut step = Step::new(Place::Destination(DestinationKind::Pipedrive));
        step.found(vec!["7".into(), "8".into()]);
        step.found(vec!["9".into()]);
        assert_eq!(step.left, ["7", "8"], "a later run keeps the first finding");
        step.deleted("7", true);
        step.deleted("7", true);
        step.deleted("8", false);
        assert!(step.left.is_empty());
        assert_eq!(step.deleted, 1, "a not-found is no deletion");
        step.complete("t");
        assert_eq!(
            step.state,
            State::Done {
                answer: Answer::Deleted { count: 1 },
                at: "t".into()
            }
        );
        let mut nothing = Step::new(Place::Stack);
        nothing.found(Vec::new());
        nothing.complete("t");
        assert!(matches!(
            nothing.state,
            State::Done {
                answer: Answer::NotFound,
                ..
            }
        ));
    }

    #[test]
    fn a_place_the_stack_no_longer_has_is_left_to_the_operator() {
        let hubspot = Place::Destination(DestinationKind::HubSpot);
        let pipedrive = Place::Destination(DestinationKind::Pipedrive);
        let mut erasures = Erasures::default();
        let (round, _) = erasures.resume_or_start("e", "t1", &[Place::Stack, hubspot, pipedrive]);
        round.step_mut(Place::Stack).unwrap().complete("t1");
        round
            .step_mut(hubspot)
            .unwrap()
            .pending("HubSpot: HTTP 503");
        // HubSpot left the stack before the next run.
        round.close_unreachable(&[Place::Stack, pipedrive], "t2", |place| {
            format!("by hand at {place}")
        });
        assert_eq!(
            round.step_mut(hubspot).unwrap().state,
            State::Done {
                answer: Answer::ByHand {
                    what: "by hand at destination hubspot".into()
                },
                at: "t2".into()
            }
        );
        assert!(
            !round.step_mut(pipedrive).unwrap().is_done(),
            "reachable: left open"
        );
        assert!(!round.finish_if_done("t2"));
    }

    #[test]
    fn the_record_names_each_place_and_what_it_answered() {
        let mut erasures = Erasures::default();
        let places = [Place::Stack, Place::Sender(Sender::Formspree)];
        let (round, _) = erasures.resume_or_start("e", "t1", &places);
        round.step_mut(Place::Stack).unwrap().complete("t1");
        round
            .step_mut(Place::Sender(Sender::Formspree))
            .unwrap()
            .done(
                Answer::ByHand {
                    what: "in Formspree's dashboard".into(),
                },
                "t1",
            );
        round.finish_if_done("t1");
        let lines = round.record_lines().join("\n");
        assert!(lines.contains("erasure e-1"), "{lines}");
        assert!(lines.contains("finished t1"), "{lines}");
        assert!(lines.contains("stack: not found"), "{lines}");
        assert!(
            lines.contains("sender formspree: cannot delete here: do it by hand, in Formspree's"),
            "{lines}"
        );
        let json = serde_json::to_value(&*round).unwrap();
        assert_eq!(json["steps"][1]["place"], "sender formspree");
        assert_eq!(json["steps"][1]["state"], "done");
        assert_eq!(json["steps"][1]["answer"]["kind"], "byHand");
        assert!(json["steps"][0].get("left").is_none());
    }
}
