//! Durations in config files: a number and a unit (`500ms`, `30s`, `2m`, `1h`, `1.5s`).
//!
//! Config files also accept integer milliseconds (see [`super::extras`]); a string always
//! needs its unit, so `"30"` cannot mean thirty milliseconds to one reader and thirty seconds
//! to another. Fractions are exact to the nanosecond: what is finer is truncated.

use std::time::Duration;

const NANOS_PER_MILLI: u128 = 1_000_000;
const NANOS_PER_SEC: u128 = 1_000 * NANOS_PER_MILLI;

/// Parses `500ms`, `30s`, `2m`, `1h` or a fraction such as `1.5s` (surrounding whitespace
/// and a space before the unit are allowed); `None` for anything else, including a bare
/// number, a sign, an exponent or a duration too long for [`Duration`]. Zero is a duration.
///
/// The result is the exact value truncated to whole nanoseconds, whatever the unit and the
/// number of digits: `0.1m` is 6 s, `1.0000000001h` is 1 h and 360 ns, and
/// `0.000000000001h` is 3 ns (3.6 exactly: the 0.6 ns are dropped). Nothing else is rounded.
///
/// Any duration that parses is usable: deadlines built from one saturate (see
/// [`crate::deadline`]), however large it is.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let unit_nanos = match unit.trim_start() {
        "ms" => NANOS_PER_MILLI,
        "s" => NANOS_PER_SEC,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3600 * NANOS_PER_SEC,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    // floor(0.fraction × unit) by long division from the last digit: exact for any number of
    // digits (a minute's or an hour's fraction needs more than nine), and every step stays
    // below `unit_nanos`. The digits are ASCII digits: `split` stopped at anything else.
    let fraction_nanos = fraction.bytes().rev().fold(0u128, |carry, digit| {
        (u128::from(digit - b'0') * unit_nanos + carry) / 10
    });
    let nanos = whole.checked_mul(unit_nanos)?.checked_add(fraction_nanos)?;
    let secs = u64::try_from(nanos / NANOS_PER_SEC).ok()?;
    // The remainder is below one second, so it fits.
    Some(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 7 s "), Some(Duration::from_secs(7)));
        assert_eq!(parse_duration("0ms"), Some(Duration::ZERO));
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0.3s"), Some(Duration::from_millis(300)));
        assert_eq!(parse_duration(".25m"), Some(Duration::from_secs(15)));
        assert_eq!(parse_duration("2.s"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_duration("0.0000000019s"),
            Some(Duration::from_nanos(1))
        );
    }

    #[test]
    fn fractions_of_minutes_and_hours_are_exact() {
        assert_eq!(parse_duration("0.1m"), Some(Duration::from_secs(6)));
        assert_eq!(parse_duration("0.1h"), Some(Duration::from_secs(360)));
        assert_eq!(
            parse_duration("1.0000000001h"),
            Some(Duration::new(3600, 360))
        );
        assert_eq!(
            parse_duration("0.00000000001h"),
            Some(Duration::from_nanos(36))
        );
        assert_eq!(
            parse_duration("0.000000000001h"),
            Some(Duration::from_nanos(3))
        );
        assert_eq!(
            parse_duration("0.0000000001m"),
            Some(Duration::from_nanos(6))
        );
        // 3.6e12 ns × 0.123456789012 = 444444440443.2 ns.
        assert_eq!(
            parse_duration("0.123456789012h"),
            Some(Duration::from_nanos(444_444_440_443))
        );
        // Just over one nanosecond, but only from the 21st digit on.
        assert_eq!(
            parse_duration("0.0000000000002777777777777777777778h"),
            Some(Duration::from_nanos(1))
        );
        assert_eq!(
            parse_duration("0.0000000000002777777777777777777777h"),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_duration("1.99999999999999999999999999999999999999999999s"),
            Some(Duration::new(1, 999_999_999))
        );
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in [
            "",
            "5",
            "ms",
            ".s",
            "1.2.3s",
            "5d",
            "5 sec",
            "-1s",
            "+1s",
            "1e3ms",
            "s5",
            "1s2",
            "99999999999999999999999999999h",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?} was accepted");
        }
    }

    mod properties {
        use std::time::Instant;

        use proptest::prelude::*;

        use super::*;
        use crate::deadline::{DeadlinePolicy, ToolPolicy};
        use crate::restart::{Backoff, Decision, RestartPolicy};

        /// Text that is often nearly a duration.
        fn duration_like() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<String>(),
                "[ ]?[0-9]{0,25}[.]?[0-9]{0,25}[ ]?(ms|s|m|h|d|)[ ]?",
            ]
        }

        proptest! {
            /// Parsing never panics, and whatever parses is usable as a timeout, a progress
            /// cap and a restart delay.
            #[test]
            fn prop_durations_parse_to_usable_deadlines(text in duration_like()) {
                let Some(d) = parse_duration(&text) else {
                    return Ok(());
                };
                let now = Instant::now();
                let policy = DeadlinePolicy::resolve(
                    &ToolPolicy::new().timeout(d).reset_on_progress(true).max_total(d),
                    None,
                    Some(d),
                    d,
                );
                let first = policy.first(now);
                prop_assert!(first >= now);
                let next = policy.on_progress(now, now + Duration::from_secs(1));
                prop_assert!(next.is_some_and(|at| at >= now));
                let mut backoff = Backoff::new(
                    RestartPolicy::default()
                        .with_initial_delay(d)
                        .with_max_delay(d),
                );
                if let Decision::RetryAfter(delay) = backoff.on_failure(now, 0.9) {
                    let _ = now + delay;
                }
            }

            /// Fractions are the exact value truncated to the nanosecond.
            #[test]
            fn prop_durations_are_exact(
                whole in 0..1_000_000u64,
                fraction in "[0-9]{0,20}",
                unit in prop::sample::select(vec!["ms", "s", "m", "h"]),
            ) {
                let unit_nanos: u128 = match unit {
                    "ms" => NANOS_PER_MILLI,
                    "s" => NANOS_PER_SEC,
                    "m" => 60 * NANOS_PER_SEC,
                    _ => 3600 * NANOS_PER_SEC,
                };
                // Twenty digits times an hour's nanoseconds fit a u128.
                let digits: u128 = if fraction.is_empty() { 0 } else { fraction.parse().unwrap() };
                let exact = u128::from(whole) * unit_nanos
                    + digits * unit_nanos / 10u128.pow(fraction.len() as u32);
                let parsed = parse_duration(&format!("{whole}.{fraction}{unit}"));
                prop_assert_eq!(parsed.map(|d| d.as_nanos()), Some(exact));
            }
        }
    }
}
