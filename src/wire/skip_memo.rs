//! Values skipped again and again (the columns a projection leaves out, given columns during
//! inference): one whose bytes start as the last one skipped did, up to the length of its final
//! str/bin payload, has that one's length, so one comparison replaces walking its keys (the
//! walk was half of reading one column of twenty f32[4] ndarray columns).

use crate::error::Result;
use crate::wire::cursor::Cursor;

/// Payloads shorter than this are walked (the comparison would save little).
const MIN_PAYLOAD: usize = 8;
/// Longer prefixes (structured dtypes' descr lists) are walked each time.
const MAX_PREFIX: usize = 256;

/// The last value skipped at one place (a column), as a byte prefix and a length.
#[derive(Default, Debug, Clone)]
pub(crate) struct SkipMemo {
    /// the value's bytes up to its final payload (empty: nothing to recall)
    prefix: Vec<u8>,
    len: usize,
}

impl SkipMemo {
    /// [`Cursor::skip`], recalling the last value's length where its bytes before the payload
    /// repeat: the same bytes parse the same way, up to a payload of the same declared length
    /// that ends the value.
    pub(crate) fn skip(&mut self, c: &mut Cursor<'_>, max_depth: usize) -> Result<()> {
        let at = c.pos();
        let rest = &c.buf()[at..];
        if !self.prefix.is_empty() && rest.len() >= self.len && rest.starts_with(&self.prefix) {
            c.set_pos(at + self.len);
            return Ok(());
        }
        c.skip(max_depth)?;
        let last = c.last_value_start() - at;
        self.learn(&c.buf()[at..c.pos()], last);
        Ok(())
    }

    /// Keep `v` (a value just skipped, whose last item starts at `last`) when it is a container
    /// whose last item is a str/bin payload that ends it.
    fn learn(&mut self, v: &[u8], last: usize) {
        self.prefix.clear();
        // (a bare str/bin is skipped from its header at once)
        if !matches!(v.first(), Some(0x80..=0x9f | 0xdc..=0xdf)) {
            return;
        }
        let Some(&m) = v.get(last) else { return };
        let (hdr, n) = match m {
            0xa0..=0xbf => (1, (m & 0x1f) as usize),
            0xc4 | 0xd9 => (2, v.get(last + 1).map_or(0, |&b| b as usize)),
            0xc5 | 0xda => (
                3,
                v.get(last + 1..last + 3)
                    .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]) as usize),
            ),
            0xc6 | 0xdb => (
                5,
                v.get(last + 1..last + 5)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize),
            ),
            _ => return,
        };
        let start = last + hdr;
        if start + n != v.len() || n < MIN_PAYLOAD || start > MAX_PREFIX {
            return;
        }
        self.prefix.extend_from_slice(&v[..start]);
        self.len = v.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(shape: u8, data: &[u8], extra: Option<&[u8]>) -> Vec<u8> {
        // {shape: [shape], (x: extra,) data: <bin>}, as an ndarray map lays its data last
        let mut v = vec![if extra.is_some() { 0x83 } else { 0x82 }];
        v.extend(b"\xa5shape\x91");
        v.push(shape);
        if let Some(e) = extra {
            v.extend(b"\xa1x\xc4");
            v.push(e.len() as u8);
            v.extend(e);
        }
        v.extend(b"\xa4data\xc4");
        v.push(data.len() as u8);
        v.extend(data);
        v
    }

    #[test]
    fn a_repeated_prefix_is_skipped_by_its_length_and_anything_else_is_walked() {
        let values = [
            map(4, &[1; 16], None),
            map(4, &[2; 16], None),        // same prefix: recalled
            map(4, &[3; 24], None),        // longer payload: walked, learnt
            map(4, &[4; 24], Some(b"ab")), // another key: walked
            map(5, &[5; 24], Some(b"ab")),
            map(5, &[6; 24], Some(b"ab")),
            vec![0x92, 0x01, 0xc4, 0x10], // an array cut short after the same kind of prefix
        ];
        let mut buf = Vec::new();
        let mut ends = Vec::new();
        for v in &values {
            buf.extend(v);
            ends.push(buf.len());
        }
        let mut c = Cursor::new(&buf, 0);
        let mut memo = SkipMemo::default();
        for &end in &ends[..ends.len() - 1] {
            memo.skip(&mut c, 16).unwrap();
            assert_eq!(c.pos(), end);
        }
        assert!(memo.skip(&mut c, 16).is_err(), "a cut value is an error");
    }
}
