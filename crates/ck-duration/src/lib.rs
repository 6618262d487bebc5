//! The helper's durations on the command line (`--grace`, `--timeout`; the CLI's
//! `cli::duration`). Plain std, a crate of its own: the fuzz target `durations` (fuzz/, through
//! crates/ck-fuzz-checks) and tests/parsers_random.rs check this parser, the helper's.

use std::time::Duration;

/// `500ms`, `10s`, `2m`, or a bare number of seconds (`1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (examples: 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s or m)")),
    };
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{s:?} is out of range (0 to 24 h)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        for bad in ["", "x", "10h", "-1s", "1e9"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
