//! Which window an audit reads next, from the progress it stored: pure,
//! table-tested rules.

use std::time::{Duration, SystemTime};

use shared::audit::Horizon;
use shared::receipt::format_timestamp;

use super::settings::{LONGEST_BACKLOG, SETTLE};

/// Where the audit stands (`config#audit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// The end of the last window fully audited: every form compared and,
    /// with import, imported.
    pub audited_until: Option<SystemTime>,
    /// The window after it, when a run stopped within it.
    pub open: Option<OpenWindow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWindow {
    pub until: SystemTime,
    pub forms_done: Vec<String>,
}

/// One period to audit, and the forms already done in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub since: SystemTime,
    pub until: SystemTime,
    pub forms_done: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgressError {
    #[error("auditedUntil ({0}) is later than now: no audit would run until then; correct or delete the config#audit item")]
    InTheFuture(String),
}

/// The next window to audit at `now`: from where the last audit ended (or
/// one period back, the first time), never before what the receipts
/// remember nor [`LONGEST_BACKLOG`] ago, at most one period long, and
/// ending [`SETTLE`] ago at the latest; `None` when that is empty. A window
/// a run stopped in is resumed as it was.
pub fn next_window(
    progress: &Progress,
    now: SystemTime,
    every: Duration,
    horizon: Horizon,
) -> Result<Option<Window>, ProgressError> {
    if let Some(until) = progress.audited_until.filter(|until| *until > now) {
        return Err(ProgressError::InTheFuture(format_timestamp(until)));
    }
    // To the millisecond, as the end is stored: the next window then
    // starts exactly where this one ended.
    let Some(latest) = now.checked_sub(SETTLE).map(whole_millis) else {
        return Ok(None);
    };
    let earliest = latest
        .checked_sub(LONGEST_BACKLOG)
        .unwrap_or(SystemTime::UNIX_EPOCH)
        .max(whole_millis(horizon.oldest));
    let Some(since) = progress
        .audited_until
        .or_else(|| latest.checked_sub(every))
        .map(|since| since.max(earliest))
    else {
        return Ok(None);
    };
    let resumed = progress
        .open
        .as_ref()
        .filter(|open| open.until > since && open.until <= latest);
    let (until, forms_done) = match resumed {
        Some(open) => (open.until, open.forms_done.clone()),
        None => ((since + every).min(latest), Vec::new()),
    };
    Ok((since < until).then_some(Window {
        since,
        until,
        forms_done,
    }))
}

fn whole_millis(at: SystemTime) -> SystemTime {
    let since_epoch = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_millis(since_epoch.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::receipt::parse_timestamp;
    use shared::Retention;

    fn at(minutes: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(minutes * 60 + 100 * 86_400 * 60)
    }

    fn progress(audited_until: Option<SystemTime>) -> Progress {
        Progress {
            audited_until,
            open: None,
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    /// Remembers everything in these tests.
    fn all_remembered() -> Horizon {
        Horizon {
            oldest: SystemTime::UNIX_EPOCH,
        }
    }

    fn window(
        progress: &Progress,
        now: SystemTime,
        horizon: Horizon,
    ) -> Option<(SystemTime, SystemTime)> {
        next_window(progress, now, HOUR, horizon)
            .unwrap()
            .map(|window| (window.since, window.until))
    }

    #[test]
    fn window_rules() {
        let now = at(1_000);
        let all = all_remembered();
        // The first audit: one period back from 15 minutes ago.
        assert_eq!(window(&progress(None), now, all), Some((at(925), at(985))));
        // Then from where the last one ended, one period at a time.
        assert_eq!(
            window(&progress(Some(at(900))), now, all),
            Some((at(900), at(960)))
        );
        assert_eq!(
            window(&progress(Some(at(960))), now, all),
            Some((at(960), at(985)))
        );
        // Nothing new yet, to the stored millisecond.
        assert_eq!(window(&progress(Some(at(985))), now, all), None);
        let stored = parse_timestamp(&format_timestamp(at(985) + Duration::from_nanos(700_000)));
        assert_eq!(
            window(&progress(stored), now + Duration::from_nanos(700_000), all),
            None
        );
        assert_eq!(window(&progress(Some(at(990))), now, all), None);
        // After a long pause, never further back than the longest backlog...
        let long_ago = now - Duration::from_secs(90 * 86_400);
        let (since, _) = window(&progress(Some(long_ago)), now, all).unwrap();
        assert_eq!(
            (now - SETTLE).duration_since(since).unwrap(),
            LONGEST_BACKLOG
        );
        // ...nor than the receipts remember.
        let retention = Retention::days(30).unwrap();
        let horizon = Horizon::at(now, retention);
        let (since, until) = window(&progress(Some(long_ago)), now, horizon).unwrap();
        assert_eq!(since, horizon.oldest);
        assert_eq!(until, since + HOUR);
    }

    #[test]
    fn a_window_a_run_stopped_in_is_resumed_with_its_forms_done() {
        let now = at(1_000);
        let stopped = Progress {
            audited_until: Some(at(800)),
            open: Some(OpenWindow {
                until: at(860),
                forms_done: vec!["a".to_owned()],
            }),
        };
        let window = next_window(&stopped, now, HOUR, all_remembered())
            .unwrap()
            .unwrap();
        assert_eq!((window.since, window.until), (at(800), at(860)));
        assert_eq!(window.forms_done, ["a"]);
        // One left behind by an older window is not.
        let stale = Progress {
            audited_until: Some(at(900)),
            ..stopped
        };
        let window = next_window(&stale, now, HOUR, all_remembered())
            .unwrap()
            .unwrap();
        assert_eq!((window.since, window.until), (at(900), at(960)));
        assert!(window.forms_done.is_empty());
    }

    /// Stored in the future, the audit would answer an empty success until
    /// then: no listing, no metric, no alarm.
    #[test]
    fn an_audited_until_later_than_now_is_an_error() {
        let now = at(1_000);
        let error =
            next_window(&progress(Some(at(2_000))), now, HOUR, all_remembered()).unwrap_err();
        assert!(error.to_string().contains("later than now"), "{error}");
    }
}
