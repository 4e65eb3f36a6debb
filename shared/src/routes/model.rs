//! What a routes file says, as the functions and the CLI hold it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::consent::Consent;
use crate::duplicate_window::Window;
use crate::spam::SpamRules;

/// Every route of a stack, and the spam rules of every form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Routes {
    pub spam: SpamRules,
    /// `duplicate_window` for every form without its own (a default
    /// applies when neither says: `duplicates::DEFAULT_WINDOW`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_window: Option<Window>,
    /// The destinations of every form without its own (`destinations =
    /// [...]`, by name); empty: every destination of the stack.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<String>,
    pub routes: Vec<Route>,
}

/// One form's place in the CRM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Route {
    /// The sender's id of the form.
    pub form: String,
    pub name: Option<String>,
    /// Form field (label, key or ref) to CRM property.
    pub fields: BTreeMap<String, String>,
    /// Constant properties on every lead of the form.
    pub set: Map<String, Value>,
    /// This form's own rules, added to the stack's.
    pub spam: SpamRules,
    /// Each submission also a CRM lead of its own, where the destination
    /// makes them (Pipedrive): `lead = true`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lead: bool,
    /// The form's marketing consent checkbox (`[route.consent]`): a
    /// mailing list subscribes a new member only when it is checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consent: Option<Consent>,
    /// Tags every lead of the form gets where the destination has them
    /// (Mailchimp's member tags): `tags = ["pricing"]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Lists every lead of the form joins where the destination has them
    /// by number (Brevo's contact lists): `lists = [2, 7]`. With a consent
    /// box, only a lead whose box is checked joins them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<u64>,
    /// `notify = false`: no new-lead notice for this form's leads
    /// (`crate::notice`); unset, they are announced where the stack has a
    /// notice URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify: Option<bool>,
    /// Answers this form's notice carries (`notify_fields = ["plan"]`, by
    /// name, label, key or ref; `name`, `email`, `message` too): none by
    /// default, so a notice holds no personal data unless asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notify_fields: Vec<String>,
    /// This form's `duplicate_window`, over the file's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_window: Option<Window>,
    /// The destinations this form's leads go to, by name, over the file's
    /// (`destinations = ["mailchimp"]`); empty: the file's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<String>,
    /// Where a visitor's browser goes once this form is stored, for a form
    /// a browser posts (`SENDER=html`), over the stack's `THANK_YOU_URL`:
    /// taken only on an allowed page origin (ingest checks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thank_you_url: Option<String>,
}

/// One thing wrong with a routes file: where (`[spam]`,
/// `[[route]] #2 "Pricing page"`), which key, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {key}: {problem}")]
pub struct RouteProblem {
    pub place: String,
    pub key: String,
    pub problem: String,
}
