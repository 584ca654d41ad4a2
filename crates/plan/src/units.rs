//! How planning writes amounts for people: dollars and Mbit/s with
//! thousands separators, the same in error messages, progress lines and
//! the report.

/// A whole number with thousands separators: `27,565`.
pub fn thousands(x: f64) -> String {
    let n = x.round();
    let digits = format!("{:.0}", n.abs());
    let mut s = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(ch);
    }
    if n < 0.0 {
        format!("-{s}")
    } else {
        s
    }
}

/// Dollars, whole: `$18,200`.
pub fn money(x: f64) -> String {
    let t = thousands(x);
    match t.strip_prefix('-') {
        Some(t) => format!("-${t}"),
        None => format!("${t}"),
    }
}

/// Mbit/s, whole above 100 and to a tenth below (small test networks):
/// the number only, `31,200` or `12.5`.
pub fn mbps(x: f64) -> String {
    if x.abs() >= 100.0 || (x - x.round()).abs() < 0.05 {
        thousands(x)
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_well() {
        assert_eq!(thousands(27565.4), "27,565");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1234567.0), "-1,234,567");
        assert_eq!(thousands(0.0), "0");
        assert_eq!(money(18200.4), "$18,200");
        assert_eq!(money(-5.0), "-$5");
        assert_eq!(mbps(31200.0), "31,200");
        assert_eq!(mbps(12.5), "12.5");
        assert_eq!(mbps(7.0), "7");
    }
}
