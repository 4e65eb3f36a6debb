//! A `duplicate_window` (`crate::duplicates`): how close in time two
//! identical submissions must be for the later to be a double submit. A
//! leaf: the routes file holds one per form.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The window when a routes file sets none: a double click, a reload that
/// posts again, an impatient second press.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(120);
/// The longest window taken: a day.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// A `duplicate_window`: `"2m"`, `"90s"`, `"1h"`; `"0s"` turns the check
/// off. Written back as seconds (`"120s"`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Window(Duration);

impl Window {
    pub const OFF: Window = Window(Duration::ZERO);

    /// A duration such as `"2m"`: whole seconds, minutes or hours, at most
    /// [`MAX_WINDOW`]; the problem in words otherwise.
    pub fn parse(text: &str) -> Result<Window, &'static str> {
        const WHY: &str = "must be a duration such as \"2m\", \"90s\" or \"1h\" (\"0s\" turns it off), at most a day";
        let text = text.trim();
        let unit = text.chars().last().ok_or(WHY)?;
        let scale = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(WHY),
        };
        let digits = &text[..text.len() - 1];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 6 {
            return Err(WHY);
        }
        let seconds: u64 = digits.parse::<u64>().map_err(|_| WHY)? * scale;
        let window = Duration::from_secs(seconds);
        (window <= MAX_WINDOW).then_some(Window(window)).ok_or(WHY)
    }

    pub fn duration(self) -> Duration {
        self.0
    }

    pub fn is_off(self) -> bool {
        self.0.is_zero()
    }
}

impl Default for Window {
    fn default() -> Self {
        Window(DEFAULT_WINDOW)
    }
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.0.as_secs())
    }
}

impl Serialize for Window {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Window {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Window::parse(&text).map_err(serde::de::Error::custom)
    }
}
