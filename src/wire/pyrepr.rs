//! Python's `repr` of floats and complex numbers (msgpack-numpy writes Python `complex` as its
//! repr string), both ways.

/// Python's `repr(float)` without the forced `.0` (as `complex.__repr__` formats its parts:
/// `PyOS_double_to_string(x, 'r', 0, flags)`): shortest round-trip digits, scientific notation
/// when the decimal exponent is below -4 or at least 16, exponent with a sign and two digits or
/// more. `sign` forces a `+` on non-negative values (the imaginary part).
pub(crate) fn py_float_repr(x: f64, sign: bool, s: &mut String) {
    use std::fmt::Write;
    if x.is_nan() {
        s.push_str(if sign { "+nan" } else { "nan" });
        return;
    }
    if x.is_sign_negative() {
        s.push('-');
    } else if sign {
        s.push('+');
    }
    let a = x.abs();
    if a.is_infinite() {
        s.push_str("inf");
        return;
    }
    if a == 0.0 {
        s.push('0');
        return;
    }
    // Rust's `{:e}` without a precision prints the shortest digits that round-trip, like
    // Python's 'r' mode: "1.5e-5", "1e16".
    let mut tmp = String::with_capacity(32);
    let _ = write!(tmp, "{a:e}");
    let (mant, exp) = tmp.split_once('e').unwrap_or((&tmp, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    if decpt <= -4 || decpt > 16 {
        s.push_str(&digits[..1]);
        if n > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        let _ = write!(s, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if decpt <= 0 {
        s.push_str("0.");
        for _ in 0..-decpt {
            s.push('0');
        }
        s.push_str(&digits);
    } else if decpt >= n {
        s.push_str(&digits);
        for _ in 0..decpt - n {
            s.push('0');
        }
    } else {
        s.push_str(&digits[..decpt as usize]);
        s.push('.');
        s.push_str(&digits[decpt as usize..]);
    }
}

/// Python's `repr(complex(re, im))`: `"(1+2j)"`, `"1j"` when the real part is +0.0.
pub(crate) fn py_complex_repr(re: f64, im: f64, s: &mut String) {
    s.clear();
    if re == 0.0 && re.is_sign_positive() {
        py_float_repr(im, false, s);
        s.push('j');
    } else {
        s.push('(');
        py_float_repr(re, false, s);
        py_float_repr(im, true, s);
        s.push_str("j)");
    }
}

/// Parse a string as Python's `complex()` does (msgpack-numpy writes `repr(complex)`: `(1+2j)`,
/// `1j`, `(-0-1j)`, `(nan+infj)`, `(1e+16-2.5e-05j)`; its reader calls `complex()` on whatever
/// the string holds): spaces around, parentheses, a bare `j` for 1j, `inf`/`nan` in any case,
/// `_` between digits. (Python also maps non-ASCII decimal digits; those are refused here.)
pub(crate) fn parse_complex(s: &[u8]) -> Option<(f64, f64)> {
    let s = std::str::from_utf8(s).ok()?.trim();
    let s = match s.strip_prefix('(') {
        Some(t) => t.strip_suffix(')')?.trim(),
        None => s,
    };
    match s.strip_suffix(['j', 'J']) {
        None => Some((py_float(s)?, 0.0)),
        Some(body) => {
            // the imaginary part starts at the last sign that is not the first char and not an
            // exponent's
            let b = body.as_bytes();
            let split = (1..b.len())
                .rev()
                .find(|&i| (b[i] == b'+' || b[i] == b'-') && !matches!(b[i - 1], b'e' | b'E'));
            let (re, im) = match split {
                Some(i) => (py_float(&body[..i])?, &body[i..]),
                None => (0.0, body),
            };
            // `j`, `+j`, `-j`: a unit imaginary part
            let im = match im {
                "" | "+" => 1.0,
                "-" => -1.0,
                _ => py_float(im)?,
            };
            Some((re, im))
        }
    }
}

/// Python's `float()` of a string already stripped: a sign, then `inf`/`infinity`/`nan` (any
/// case) or decimal digits with an optional fraction and exponent, `_` only between two digits.
fn py_float(t: &str) -> Option<f64> {
    let (neg, body) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let v = if body.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else {
        let b = body.as_bytes();
        let (mut mantissa_digits, mut in_exponent, mut underscores) = (0, false, false);
        for (i, &ch) in b.iter().enumerate() {
            match ch {
                b'0'..=b'9' => mantissa_digits += usize::from(!in_exponent),
                b'_' if i > 0
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit) =>
                {
                    underscores = true
                }
                b'.' if !in_exponent => {}
                b'e' | b'E' if !in_exponent && mantissa_digits > 0 => in_exponent = true,
                b'+' | b'-' if i > 0 && matches!(b[i - 1], b'e' | b'E') => {}
                _ => return None,
            }
        }
        if mantissa_digits == 0 {
            return None;
        }
        // (Rust's parser refuses what is left malformed: two dots, an exponent without digits)
        if underscores {
            body.replace('_', "").parse::<f64>().ok()?
        } else {
            body.parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_reprs() {
        // reprs as Python prints them
        assert_eq!(parse_complex(b"(1+2j)"), Some((1.0, 2.0)));
        assert_eq!(parse_complex(b"1j"), Some((0.0, 1.0)));
        assert_eq!(parse_complex(b"-1j"), Some((0.0, -1.0)));
        assert_eq!(parse_complex(b"(1e+16-2.5e-05j)"), Some((1e16, -2.5e-05)));
        let (re, im) = parse_complex(b"(-0-0j)").unwrap();
        assert!(re == 0.0 && re.is_sign_negative() && im.is_sign_negative());
        let (re, im) = parse_complex(b"(nan+infj)").unwrap();
        assert!(re.is_nan() && im == f64::INFINITY);
        assert_eq!(parse_complex(b"(1+2)"), None);
    }

    #[test]
    fn complex_strings_as_python_complex_reads_them() {
        // each pair checked against CPython's complex()
        let ok: &[(&[u8], (f64, f64))] = &[
            (b"j", (0.0, 1.0)),
            (b"-j", (0.0, -1.0)),
            (b"1+j", (1.0, 1.0)),
            (b"1-J", (1.0, -1.0)),
            (b" ( 1+2j ) ", (1.0, 2.0)),
            (b"1_0", (10.0, 0.0)),
            (b"1_0.5_5e1_0j", (0.0, 105500000000.0)),
            (b"-Infinity", (f64::NEG_INFINITY, 0.0)),
            (b"1e5+2e-3J", (100000.0, 0.002)),
            (b"1.", (1.0, 0.0)),
            (b".5j", (0.0, 0.5)),
        ];
        for (s, want) in ok {
            assert_eq!(
                parse_complex(s),
                Some(*want),
                "{}",
                String::from_utf8_lossy(s)
            );
        }
        assert!(parse_complex(b"nAn").unwrap().0.is_nan());
        for bad in [
            &b"1__0"[..],
            b"_1",
            b"1_",
            b"+-1",
            b"(1+2j",
            b"0x1",
            b"1 + 2j",
            b"1e",
            b"1.5e+",
            b"-(1+2j)",
            b"1j+1",
            b"",
            b"()",
            b".",
            b"e5",
            b"1_.5",
            b"1._5",
            b"1e_5",
        ] {
            assert_eq!(parse_complex(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
