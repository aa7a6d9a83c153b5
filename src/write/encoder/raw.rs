//! Columns of raw msgpack values (`msgpack_numpy.kind = msgpack`, from
//! [`crate::Conflicts::Binary`]): each row's bytes written back as they were read.

use crate::error::Result;
use crate::wire::cursor::Cursor;
use crate::wire::write::Out;
use crate::write::access::Bins;
use crate::write::encoder::ColumnEncoder;

/// One msgpack value per row, verbatim; a null row is nil.
pub(crate) struct RawEnc {
    pub(crate) bins: Bins,
}

impl ColumnEncoder for RawEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.bins.is_null(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let v = self.bins.value(row);
        // never write bytes that are not exactly one msgpack value: the output would not read
        Cursor::new(v, 0).skip_exactly_one(crate::wire::cursor::DEFAULT_MAX_DEPTH)?;
        out.buf.extend_from_slice(v);
        Ok(())
    }
    fn size_hint(&self) -> usize {
        self.bins.bytes_hint() + self.bins.len()
    }
}
