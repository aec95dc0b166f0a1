//! Timestamps as RFC 3339 in UTC, for what Switchboard writes down (a task's `createdAt`,
//! an audit line's `time`), without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` in RFC 3339 UTC, to the second (`2025-11-25T10:30:00Z`) or, with `millis`, to the
/// millisecond (`2025-11-25T10:30:00.250Z`). A time before 1970 is written as 1970's start.
pub fn rfc3339(t: SystemTime, millis: bool) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let second = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    );
    if millis {
        format!("{second}.{:03}Z", since.subsec_millis())
    } else {
        second + "Z"
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timestamps_are_rfc_3339_utc() {
        let at = UNIX_EPOCH + Duration::from_secs(1_764_066_600);
        assert_eq!(rfc3339(at, false), "2025-11-25T10:30:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH, false), "1970-01-01T00:00:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap, false), "2000-02-29T00:00:00Z");
        let at = UNIX_EPOCH + Duration::from_millis(1_709_251_199_250);
        assert_eq!(rfc3339(at, true), "2024-02-29T23:59:59.250Z");
        assert_eq!(rfc3339(UNIX_EPOCH, true), "1970-01-01T00:00:00.000Z");
    }
}
