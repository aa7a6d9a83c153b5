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

/// Parse Python's `repr(complex)`: `(1+2j)`, `1j`, `(-0-1j)`, `(nan+infj)`, `(1e+16-2.5e-05j)`.
pub(crate) fn parse_complex(s: &[u8]) -> Option<(f64, f64)> {
    let s = std::str::from_utf8(s).ok()?.trim();
    let s = s
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(s);
    let num = |t: &str| -> Option<f64> {
        let (sign, body) = match t.as_bytes().first()? {
            b'-' => (-1.0, &t[1..]),
            b'+' => (1.0, &t[1..]),
            _ => (1.0, t),
        };
        let v = match body {
            "inf" | "infinity" => f64::INFINITY,
            "nan" => f64::NAN,
            _ => body.parse::<f64>().ok()?,
        };
        Some(if v.is_nan() {
            v.copysign(sign)
        } else {
            sign * v
        })
    };
    match s.strip_suffix(['j', 'J']) {
        None => Some((num(s)?, 0.0)),
        Some(body) => {
            // split at the last sign that is not the first char and not after an exponent 'e'
            let b = body.as_bytes();
            let split = (1..b.len())
                .rev()
                .find(|&i| (b[i] == b'+' || b[i] == b'-') && !matches!(b[i - 1], b'e' | b'E'));
            match split {
                Some(i) => Some((num(&body[..i])?, num(&body[i..])?)),
                None => Some((0.0, num(body)?)),
            }
        }
    }
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
}
