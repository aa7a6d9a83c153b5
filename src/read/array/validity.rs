//! Which rows of a column hold a value: a validity bitmap built over bytes already zeroed.
//!
//! Why not arrow's `NullBufferBuilder`: it grows its bitmap a byte at a time, and each growth is a
//! `memset` call, once a run of nulls and once every eighth value. A sparse table's columns are
//! mostly short runs of nulls between single values (2,000 columns, 200 keys a record): those
//! calls were a fifth of its read. Here the bitmap is zeroed ahead in large steps, so a run of
//! nulls only moves the length and a value sets one bit.

use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};

#[derive(Default)]
pub(crate) struct Validity {
    /// the bitmap, once a null was appended; its bytes past the rows' are zero
    bits: Option<Vec<u8>>,
    /// rows appended
    len: usize,
    /// rows the column is expected to hold ([`Validity::reserve`]): the bitmap's first size
    expected: usize,
}

impl Validity {
    /// Room for `rows` more rows.
    pub(crate) fn reserve(&mut self, rows: usize) {
        self.expected = self.len + rows;
    }

    #[inline]
    pub(crate) fn append_valid(&mut self) {
        if let Some(bits) = &mut self.bits {
            let byte = self.len / 8;
            if byte >= bits.len() {
                grow(bits, byte + 1);
            }
            bits[byte] |= 1 << (self.len % 8);
        }
        self.len += 1;
    }

    #[inline]
    pub(crate) fn append_nulls(&mut self, n: usize) {
        let end = self.len + n;
        match &mut self.bits {
            Some(bits) if end.div_ceil(8) <= bits.len() => {}
            Some(bits) => grow(bits, end.div_ceil(8)),
            None => self.materialize(end),
        }
        self.len = end;
    }

    /// The bitmap, every row so far valid, sized for `end` rows at least.
    #[cold]
    fn materialize(&mut self, end: usize) {
        let mut bits = vec![0u8; end.max(self.expected).div_ceil(8)];
        bits[..self.len / 8].fill(0xff);
        if self.len % 8 != 0 {
            bits[self.len / 8] = (1u8 << (self.len % 8)) - 1;
        }
        self.bits = Some(bits);
    }

    /// The rows' validity (`None`: no null), and a new empty bitmap.
    pub(crate) fn finish(&mut self) -> Option<NullBuffer> {
        let len = std::mem::take(&mut self.len);
        self.expected = 0;
        let mut bits = self.bits.take()?;
        bits.truncate(len.div_ceil(8));
        Some(NullBuffer::new(BooleanBuffer::new(
            Buffer::from_vec(bits),
            0,
            len,
        )))
    }
}

/// Zero bytes appended to `bits` so it holds `bytes` at least (doubling: a column longer than
/// expected grows in few steps).
#[cold]
fn grow(bits: &mut Vec<u8>, bytes: usize) {
    bits.resize(bytes.max(bits.len() * 2), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bitmap_is_arrows() {
        // runs of every length around byte boundaries, against arrow's own builder
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for reserve in [0, 5, 1000] {
            let mut ours = Validity::default();
            let mut arrow = arrow_buffer::NullBufferBuilder::new(0);
            ours.reserve(reserve);
            for _ in 0..400 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let n = (rng % 19) as usize;
                if rng % 3 == 0 {
                    ours.append_nulls(n);
                    arrow.append_n_nulls(n);
                } else {
                    for _ in 0..n {
                        ours.append_valid();
                        arrow.append_non_null();
                    }
                }
            }
            assert_eq!(ours.finish(), arrow.finish());
        }
        // no null: no bitmap
        let mut v = Validity::default();
        v.append_valid();
        assert!(v.finish().is_none());
        // a bitmap made after valid rows that fill bytes and part of one
        let mut v = Validity::default();
        (0..11).for_each(|_| v.append_valid());
        v.append_nulls(2);
        v.append_valid();
        let got = v.finish().unwrap();
        let want: Vec<bool> = (0..14).map(|i| !(11..13).contains(&i)).collect();
        assert_eq!(got.iter().collect::<Vec<_>>(), want);
        assert_eq!(got.null_count(), 2);
    }
}
