//! Values that did not unify ([`crate::Conflicts::Binary`]): each kept as its raw msgpack bytes.

use super::*;
use crate::error::Result;
use crate::wire::cursor::{Cursor, Kind};
use arrow_array::builder::BinaryBuilder;
use arrow_array::*;
use std::sync::Arc;

/// One row: the bytes of its value as they are in the input; nil (or a missing key) is null.
pub(crate) struct RawDecoder {
    pub(crate) b: BinaryBuilder,
    pub(crate) ctx: Ctx,
}

impl ArrayDecoder for RawDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? == Kind::Nil {
            c.read_nil()?;
            self.b.append_null();
            return Ok(());
        }
        let start = c.pos();
        c.skip(self.ctx.max_depth)?;
        self.b.append_value(&c.buf()[start..c.pos()]);
        Ok(())
    }
    fn append_null(&mut self) {
        self.b.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(self.b.finish()))
    }
}
