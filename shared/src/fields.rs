//! The names every rule about fields shares: the lead's own fields, and
//! what a CRM property's internal name may be. A leaf, so that the lead,
//! the field map and the routes, which all check names, stand on it and
//! never on each other for it.

/// Form fields that become the lead's own fields; the others are kept as
/// extra fields.
pub(crate) const NAME: &str = "name";
pub(crate) const EMAIL: &str = "email";
pub(crate) const MESSAGE: &str = "message";
/// The lead's own fields: a route's constants never replace them.
pub const OWN_FIELDS: [&str; 3] = [NAME, EMAIL, MESSAGE];

/// A CRM's internal name for a property or field, as `FIELD_MAP`, a
/// route and the id settings must give it: letters, digits and `_`
/// (labels have spaces), at most 100 of them.
pub fn is_property_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
