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

/// Column names → their index, looked up by a record's key bytes: a hash table of its own,
/// where an `IndexMap<String, _>` lookup checked the key was UTF-8, hashed it through `Hasher`
/// and compared it in `memcmp` (half the read of records whose keys come in another order each
/// time, and a tenth of a sparse table's). A slot holds a name's length and first bytes, so a
/// name of up to 8 bytes is matched without reading it from elsewhere.
#[derive(Debug, Default, Clone)]
pub(crate) struct KeyIndex {
    /// the names' bytes one after another, name `i` at `at[i]..at[i + 1]`
    bytes: Vec<u8>,
    at: Vec<usize>,
    /// open addressing, a power of two at least twice the names; `index` 0: empty
    slots: Vec<Slot>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    /// [`signature`]'s word: for a name of up to 8 bytes, the name itself
    word: u64,
    len: u32,
    /// the name's index + 1
    index: u32,
}

impl KeyIndex {
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut ix = KeyIndex {
            bytes: Vec::new(),
            at: vec![0],
            slots: Vec::new(),
        };
        ix.extend(names);
        ix
    }

    /// Add `names` after those there (amortized: the table doubles when half full).
    pub(crate) fn extend<'a>(&mut self, names: impl IntoIterator<Item = &'a [u8]>) {
        let from = self.len();
        for n in names {
            self.bytes.extend_from_slice(n);
            self.at.push(self.bytes.len());
        }
        let count = self.len();
        let size = (count * 2).next_power_of_two().max(8);
        let from = if size > self.slots.len() {
            self.slots = vec![Slot::default(); size];
            0
        } else {
            from
        };
        for i in from..count {
            let name = &self.bytes[self.at[i]..self.at[i + 1]];
            // a name given twice: its first index, as a map's `get` finds
            if self.get(name).is_some() {
                continue;
            }
            let (h, word) = signature(name);
            let mut s = h as usize & (size - 1);
            while self.slots[s].index != 0 {
                s = (s + 1) & (size - 1);
            }
            self.slots[s] = Slot {
                word,
                len: name.len() as u32,
                index: i as u32 + 1,
            };
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.at.len().saturating_sub(1)
    }

    /// The index of the name equal to `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<usize> {
        let mask = self.slots.len().checked_sub(1)?;
        let (h, word) = signature(key);
        let n = key.len();
        let mut s = h as usize & mask;
        loop {
            let slot = self.slots[s];
            if slot.index == 0 {
                return None;
            }
            if slot.word == word && slot.len as usize == n {
                let i = slot.index as usize - 1;
                if n <= 8 || key_eq(&self.bytes[self.at[i]..self.at[i + 1]], key) {
                    return Some(i);
                }
            }
            s = (s + 1) & mask;
        }
    }
}

/// A key's hash, and a word of it that for a key of up to 8 bytes is the key itself (with its
/// length): the first and last bytes in overlapping loads (not a copy into a zeroed word: that
/// word read back right after bytes stored one by one stalled on every key), the bytes between
/// them folded into the hash for longer keys.
#[inline]
fn signature(k: &[u8]) -> (u32, u64) {
    const M: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = k.len();
    let w8 = |at: usize| u64::from_le_bytes(k[at..at + 8].try_into().expect("8 bytes"));
    let w4 = |at: usize| u32::from_le_bytes(k[at..at + 4].try_into().expect("4 bytes")) as u64;
    let w2 = |at: usize| u16::from_le_bytes(k[at..at + 2].try_into().expect("2 bytes")) as u64;
    let (word, mut mix) = match n {
        0 => (0, 0),
        1 => (k[0] as u64, 0),
        2..=3 => (w2(0) | (w2(n - 2) << 16), 0),
        4..=7 => (w4(0) | (w4(n - 4) << 32), 0),
        _ => (w8(0), w8(n - 8)),
    };
    let mut at = 8;
    while at + 8 < n {
        mix = (mix ^ w8(at)).wrapping_mul(M).rotate_left(29);
        at += 8;
    }
    let h =
        (word ^ (n as u64).rotate_left(56)).wrapping_mul(M) ^ mix.wrapping_mul(M.rotate_left(17));
    let h = h ^ (h >> 29);
    ((h.wrapping_mul(M) >> 32) as u32, word)
}

#[cfg(test)]
mod tests {
    use super::{key_eq, KeyIndex};

    #[test]
    fn the_index_finds_every_name_and_nothing_else() {
        let names: Vec<String> = (0..3000)
            .map(|i| match i % 4 {
                0 => format!("k{i}"),
                1 => format!("a_rather_long_column_name_{i}"),
                2 => "x".repeat(i % 23),
                _ => format!("{i:08}"),
            })
            .collect();
        let ix = KeyIndex::new(names.iter().map(|s| s.as_bytes()));
        for n in &names {
            let first = names.iter().position(|m| m == n);
            assert_eq!(ix.get(n.as_bytes()), first, "{n}");
        }
        for other in ["k1", "k3001", "a_rather_long_column_name_0", "", "0000000a"] {
            assert_eq!(
                ix.get(other.as_bytes()),
                names.iter().position(|m| m == other),
                "{other}"
            );
        }
        assert_eq!(KeyIndex::default().get(b"x"), None);
        // made a few names at a time, as a walk meets them: the same answers
        let mut grown = KeyIndex::new(names[..5].iter().map(|s| s.as_bytes()));
        for part in names[5..].chunks(7) {
            grown.extend(part.iter().map(|s| s.as_bytes()));
        }
        for n in &names {
            assert_eq!(grown.get(n.as_bytes()), ix.get(n.as_bytes()), "{n}");
        }
        assert_eq!(grown.get(b"k3001"), None);
    }

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
