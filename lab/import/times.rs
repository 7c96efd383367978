//! Message times from a log's timestamps: RFC 3339 text to milliseconds,
//! then to milliseconds since the session's first recorded time, which is
//! what the engine's `now_ms` and the cost observer's cache TTL read.

/// `2025-10-27T14:03:11.123Z` (or `+hh:mm` / `-hh:mm` for `Z`, any number
/// of fraction digits, `t`/`z` lower case) as milliseconds since the Unix
/// epoch; `None` for anything else or a time before 1970.
pub fn parse_rfc3339_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| s.get(from..to)?.parse::<i64>().ok();
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let first3: String = frac[..digits.min(3)]
            .chars()
            .chain("000".chars())
            .take(3)
            .collect();
        millis = first3.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let m = o[1..3].parse::<i64>().ok()? * 60 + o[4..6].parse::<i64>().ok()?;
            if o.starts_with('-') {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_min * 60;
    u64::try_from(secs * 1_000 + millis).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Times relative to the earliest one; empty when none is known. A time
/// before the earliest cannot happen after the `min`, so every value fits.
pub fn since_start(times: impl Iterator<Item = Option<u64>>) -> Vec<Option<u64>> {
    let times: Vec<Option<u64>> = times.collect();
    let Some(start) = times.iter().flatten().min().copied() else {
        return Vec::new();
    };
    times.into_iter().map(|t| t.map(|t| t - start)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_parse_to_epoch_milliseconds() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Some(1_500));
        // `date -u -d 2025-10-27T14:03:11Z +%s` = 1761573791
        assert_eq!(
            parse_rfc3339_ms("2025-10-27T14:03:11.123Z"),
            Some(1_761_573_791_123)
        );
        assert_eq!(
            parse_rfc3339_ms("2025-10-27T16:03:11.123456+02:00"),
            Some(1_761_573_791_123)
        );
        assert_eq!(
            parse_rfc3339_ms("2024-02-29T00:00:00Z"),
            Some(1_709_164_800_000)
        );
        for bad in [
            "",
            "2025-10-27",
            "2025-13-01T00:00:00Z",
            "2025-10-27T14:03:11",
            "1969-12-31T23:59:59Z",
            "2025-10-27T14:03:11.Z",
            "x025-10-27T14:03:11Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn times_are_relative_to_the_earliest() {
        assert_eq!(
            since_start([Some(5_000), None, Some(4_000)].into_iter()),
            [Some(1_000), None, Some(0)]
        );
        assert!(since_start([None, None].into_iter()).is_empty());
    }
}
