//! Comparing map keys. Every record compares each of its keys with a column name, and `==` on
//! byte slices is a call into libc's `memcmp`: for keys of a few bytes the call costs more than the
//! comparison (15% of the schema walk over an embedding table was that call).

/// `a == b`, inline for slices of up to 16 bytes (two overlapping loads from each side).
#[inline]
pub(crate) fn key_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    #[inline(always)]
    fn word<const W: usize>(s: &[u8], at: usize) -> [u8; W] {
        s[at..at + W].try_into().expect("W bytes")
    }
    match n {
        0 => true,
        1 => a[0] == b[0],
        2..=3 => word::<2>(a, 0) == word::<2>(b, 0) && word::<2>(a, n - 2) == word::<2>(b, n - 2),
        4..=7 => word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, n - 4) == word::<4>(b, n - 4),
        8..=16 => word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, n - 8) == word::<8>(b, n - 8),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::key_eq;

    #[test]
    fn equal_to_slice_equality_for_every_length_and_difference() {
        let base: Vec<u8> = (0..40u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(1))
            .collect();
        for n in 0..=40 {
            let a = &base[..n];
            assert!(key_eq(a, a), "{n}");
            for i in 0..n {
                let mut b = a.to_vec();
                b[i] ^= 0x20;
                assert_eq!(key_eq(a, &b), a == &b[..], "{n} {i}");
                assert!(!key_eq(a, &b), "{n} differs at {i}");
            }
            if n > 0 {
                assert!(!key_eq(a, &base[..n - 1]));
            }
        }
    }
}
