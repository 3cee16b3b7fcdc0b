//! Value parsers that give every numeric flag a range: a count that does not fit in
//! memory, a negative seed or a share outside [0, 1] is refused while the flags are parsed,
//! with a message that names the range, before any file is read or folder made.
//!
//! Clap prints these messages as ``error: invalid value 'V' for '--flag <N>': MESSAGE``.

/// A parser for a whole number in `lo..=hi`, as any unsigned integer type.
///
/// Every integer flag except seeds uses it (the test `every_numeric_flag_has_a_bounded_parser`
/// checks that), so a typo like `--bootstrap 4294967295` is an error, not a 24 GB allocation.
pub fn whole<T>(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s: &str| {
        let v = parse_whole(s)
            .map_err(|e| format!("{e}; it takes a whole number from {lo} to {hi}"))?;
        if !(lo..=hi).contains(&v) {
            return Err(format!("{v} is out of range: it takes a whole number from {lo} to {hi}"));
        }
        T::try_from(v).map_err(|_| format!("{v} does not fit this platform's integer type"))
    }
}

/// `s` as a non-negative integer, or why not (a minus sign gets its own message).
fn parse_whole(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("`{s}` is negative"));
    }
    t.parse::<u64>().map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => format!("`{s}` is too large"),
        _ => format!("`{s}` is not a whole number"),
    })
}

/// A parser for seeds: any non-negative integer that fits in 64 bits (every one is a valid
/// seed, so this is the only integer parser without a narrower range).
///
/// # Errors
/// "takes a non-negative integer" for `-5`, `1.5`, `x` or a value past 2^64 − 1.
pub fn seed(s: &str) -> Result<u64, String> {
    parse_whole(s)
        .map_err(|e| format!("{e}; a seed takes a non-negative integer (0 to {})", u64::MAX))
}

/// How an end of a [`real`] range is bounded.
#[derive(Debug, Clone, Copy)]
pub enum End {
    /// The end value itself is allowed.
    Closed(f64),
    /// Only values strictly inside are allowed.
    Open(f64),
}

impl End {
    fn value(self) -> f64 {
        match self {
            End::Closed(v) | End::Open(v) => v,
        }
    }
}

/// A parser for a finite real number between `lo` and `hi` (each end closed or open); `what`
/// says what the number is, e.g. "a share of items".
pub fn real(
    lo: End,
    hi: End,
    what: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let range = format!(
            "{}{}, {}{}",
            if matches!(lo, End::Closed(_)) { "[" } else { "(" },
            lo.value(),
            hi.value(),
            if matches!(hi, End::Closed(_)) { "]" } else { ")" }
        );
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number; it takes {what} in {range}"))?;
        let above = match lo {
            End::Closed(l) => v >= l,
            End::Open(l) => v > l,
        };
        let below = match hi {
            End::Closed(h) => v <= h,
            End::Open(h) => v < h,
        };
        if v.is_finite() && above && below {
            Ok(v)
        } else {
            Err(format!("{s} is out of range: it takes {what} in {range}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_refuses_negative_fractional_and_out_of_range_values() {
        let p = whole::<usize>(100, 1_000_000);
        assert_eq!(p("100"), Ok(100));
        assert_eq!(p("1000000"), Ok(1_000_000));
        assert!(p("99").unwrap_err().contains("from 100 to 1000000"));
        assert!(p("1000001").unwrap_err().contains("out of range"));
        assert!(p("-5").unwrap_err().contains("negative"));
        assert!(p("2.5").unwrap_err().contains("not a whole number"));
        assert!(p("99999999999999999999999").unwrap_err().contains("too large"));
    }

    #[test]
    fn real_honours_open_and_closed_ends() {
        let unit = real(End::Closed(0.0), End::Closed(1.0), "a share");
        assert_eq!(unit("0"), Ok(0.0));
        assert_eq!(unit("1"), Ok(1.0));
        assert!(unit("1.5").unwrap_err().contains("in [0, 1]"));
        assert!(unit("NaN").is_err() && unit("inf").is_err());
        let open = real(End::Open(0.0), End::Open(1.0), "p");
        assert!(open("0").is_err() && open("1").is_err());
        assert_eq!(open("0.5"), Ok(0.5));
    }
}
