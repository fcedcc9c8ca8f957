//! Timestamps: RFC 3339 UTC formatting of the `timestamp` field, and the
//! parsing of the instants `audit_read` filters on, without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as RFC 3339 UTC with milliseconds: `2026-11-29T18:45:03.123Z`.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// An instant as (seconds since 1970-01-01 UTC, nanoseconds), from an RFC 3339
/// time (`2026-11-30T08:33:42Z`, any fraction, `Z` or `±hh:mm`; `T`, `t` or a
/// space between date and time) or a date (`2026-11-30`, midnight UTC).
pub fn parse_instant(text: &str) -> Option<(i64, u32)> {
    let text = text.trim();
    let days = parse_date(text.get(..10)?)?;
    let rest = &text[10..];
    if rest.is_empty() {
        return Some((days * 86_400, 0));
    }
    let (clock, rest) = parse_clock(rest.strip_prefix(['T', 't', ' '])?)?;
    let (nanos, rest) = parse_fraction(rest)?;
    let offset = parse_offset(rest)?;
    Some((days * 86_400 + clock - offset, nanos))
}

/// `text` as a number when it is exactly `digits` ASCII digits.
fn number(text: &str, digits: usize) -> Option<i64> {
    (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` as days since 1970-01-01, when it names a day that exists.
fn parse_date(date: &str) -> Option<i64> {
    let (year, month, day) = (
        number(date.get(..4)?, 4)?,
        number(date.get(5..7)?, 2)?,
        number(date.get(8..10)?, 2)?,
    );
    if date.as_bytes()[4] != b'-' || date.as_bytes()[7] != b'-' {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month as u32, day as u32);
    // A day past the month's end (Feb 30) lands in the next month.
    (civil_from_days(days) == (year, month as u32, day as u32)).then_some(days)
}

/// `hh:mm:ss` at the start of `text` as seconds into the day (a leap second
/// allowed), and the text after it.
fn parse_clock(text: &str) -> Option<(i64, &str)> {
    let (hour, minute, second) = (
        number(text.get(..2)?, 2)?,
        number(text.get(3..5)?, 2)?,
        number(text.get(6..8)?, 2)?,
    );
    if text.as_bytes()[2] != b':' || text.as_bytes()[5] != b':' || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some((hour * 3600 + minute * 60 + second, &text[8..]))
}

/// An optional fraction of a second (`.` and at least one digit; digits past
/// the ninth ignored) as nanoseconds, and the text after it.
fn parse_fraction(text: &str) -> Option<(u32, &str)> {
    let Some(fraction) = text.strip_prefix('.') else {
        return Some((0, text));
    };
    let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let mut nanos = 0u32;
    for (i, b) in fraction.bytes().take(digits.min(9)).enumerate() {
        nanos += u32::from(b - b'0') * 10u32.pow(8 - i as u32);
    }
    Some((nanos, &fraction[digits..]))
}

/// The whole of `text` as an offset from UTC in seconds: `Z` or `±hh:mm`.
fn parse_offset(text: &str) -> Option<i64> {
    if matches!(text, "Z" | "z") {
        return Some(0);
    }
    let sign = match text.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (oh, om) = (number(text.get(1..3)?, 2)?, number(text.get(4..6)?, 2)?);
    if text.len() != 6 || text.as_bytes()[3] != b':' || oh > 23 || om > 59 {
        return None;
    }
    Some(sign * (oh * 3600 + om * 60))
}

/// (year, month, day), proleptic Gregorian, to days since 1970-01-01.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_977_903_123);
        assert_eq!(rfc3339(t), "2026-11-29T18:45:03.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn instants_parse_from_rfc3339_and_dates() {
        let base = 1_795_977_903; // 2026-11-29T18:45:03Z
        assert_eq!(parse_instant("2026-11-29T18:45:03Z"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29T18:45:03.123Z"), Some((base, 123_000_000)));
        assert_eq!(
            parse_instant("2026-11-29t18:45:03.123456789z"),
            Some((base, 123_456_789))
        );
        assert_eq!(
            parse_instant("2026-11-29 18:45:03.1234567891Z"),
            Some((base, 123_456_789))
        );
        assert_eq!(parse_instant("2026-11-29T19:45:03+01:00"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29T13:15:03-05:30"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29"), Some((base - (18 * 3600 + 45 * 60 + 3), 0)));
        assert_eq!(parse_instant("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse_instant("2000-02-29"), Some((951_782_400, 0)));
        for t in [
            "1795977903",
            "2026-11-29T18:45:03",
            "2026-11-29T18:45Z",
            "2026-11-29T18:45:03.Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T18:45:03+1:00",
            "2026-11-29T18:45:03+01:00x",
            "2026-02-29",
            "2026-00-10",
            "2026-1-10",
            "last week",
            "",
        ] {
            assert_eq!(parse_instant(t), None, "{t}");
        }
        // Round trip with the formatter.
        let t = UNIX_EPOCH + Duration::from_millis(1_795_977_903_123);
        assert_eq!(parse_instant(&rfc3339(t)), Some((base, 123_000_000)));
    }
}
