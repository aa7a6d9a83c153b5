//! Arrow maps as msgpack maps.

use arrow_buffer::{NullBuffer, OffsetBuffer};

use crate::error::Result;
use crate::wire::write::{self as wire, Out};
use crate::write::encoder::ColumnEncoder;

/// An Arrow Map: a msgpack map of the entries' encodings.
pub(crate) struct MapEnc {
    pub(crate) offsets: OffsetBuffer<i32>,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) keys: Box<dyn ColumnEncoder>,
    pub(crate) values: Box<dyn ColumnEncoder>,
    pub(crate) len: usize,
}

impl ColumnEncoder for MapEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (a, b) = (self.offsets[row] as usize, self.offsets[row + 1] as usize);
        wire::map_hdr(&mut out.buf, b - a);
        for j in a..b {
            self.keys.encode(j, out)?;
            self.values.encode(j, out)?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.keys.may_nd() || self.values.may_nd()
    }
    fn size_hint(&self) -> usize {
        self.keys.size_hint() + self.values.size_hint() + self.len * 3
    }
}
