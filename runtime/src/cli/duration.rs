//! Durations on the command line: a number and a unit, as in `500ms`, `5s`, `2m` or `1h`.
//!
//! A unit is required, so that `--timeout 5` cannot silently mean five milliseconds to one
//! reader and five seconds to another. Fractions are allowed (`1.5s`) and kept exact to the
//! nanosecond.

use std::time::Duration;

const NANOS_PER_MILLI: u128 = 1_000_000;
const NANOS_PER_SEC: u128 = 1_000 * NANOS_PER_MILLI;

/// Parses a duration such as `500ms`, `5s`, `2m` or `1h`; used as a clap value parser.
pub(crate) fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_nanos = match unit.trim() {
        "ms" => NANOS_PER_MILLI,
        "s" => NANOS_PER_SEC,
        "m" => 60 * NANOS_PER_SEC,
        "h" => 3600 * NANOS_PER_SEC,
        "" => return Err("a duration needs a unit (ms, s, m or h), as in 500ms or 5s".to_owned()),
        other => {
            return Err(format!(
                "unknown unit {other:?}: use ms, s, m or h, as in 500ms or 5s"
            ))
        }
    };
    let not_a_number = || format!("{number:?} is not a number: write a duration as in 500ms or 5s");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(not_a_number());
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| not_a_number())?
    };
    // Digits past the nanosecond cannot matter; dropping them keeps the arithmetic in range.
    let fraction = &fraction[..fraction.len().min(9)];
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        let digits: u128 = fraction.parse().map_err(|_| not_a_number())?;
        digits * unit_nanos / 10u128.pow(fraction.len() as u32)
    };
    let nanos = whole
        .checked_mul(unit_nanos)
        .and_then(|n| n.checked_add(fraction_nanos))
        .ok_or_else(|| format!("{text:?} is too long a duration"))?;
    if nanos == 0 {
        return Err("a duration must be greater than zero".to_owned());
    }
    let secs = u64::try_from(nanos / NANOS_PER_SEC)
        .map_err(|_| format!("{text:?} is too long a duration"))?;
    // The remainder is below one second, so it fits.
    Ok(Duration::new(secs, (nanos % NANOS_PER_SEC) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse(" 7 s "), Ok(Duration::from_secs(7)));
    }

    #[test]
    fn fractions_are_exact() {
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0.3s"), Ok(Duration::from_millis(300)));
        assert_eq!(parse(".25m"), Ok(Duration::from_secs(15)));
        assert_eq!(parse("2.s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("0.0000000019s"), Ok(Duration::from_nanos(1)));
    }

    #[test]
    fn a_unit_is_required() {
        assert!(parse("5").unwrap_err().contains("needs a unit"));
        assert!(parse("5 ").unwrap_err().contains("needs a unit"));
    }

    #[test]
    fn nonsense_is_refused() {
        for bad in [
            "", "ms", ".s", "1.2.3s", "5d", "5 sec", "-1s", "1e3ms", "0s", "0.0ms",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(parse("99999999999999999999999999999h").is_err());
    }
}
