//! Object arrays (pickles) kept as raw bytes, only when asked for: never unpickled.

use super::*;
use crate::error::Result;
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::{probe, Special};
use arrow_array::builder::BinaryBuilder;
use arrow_array::*;
use std::sync::Arc;

/// Object arrays kept as raw pickle bytes (opt-in; never unpickled).
pub(crate) struct ObjectDecoder {
    pub(crate) b: BinaryBuilder,
    pub(crate) ctx: Ctx,
}

impl ArrayDecoder for ObjectDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? == Kind::Nil {
            c.read_nil()?;
            self.b.append_null();
            return Ok(());
        }
        let start = c.pos();
        match probe(c, self.ctx.dialect, self.ctx.npy_ext, self.ctx.max_depth)? {
            Some(Special::Array(nd)) if nd.kind == Some(b"O") => {
                self.b.append_value(nd.data);
                Ok(())
            }
            _ => {
                c.set_pos(start);
                Err(found(c, "object ndarray"))
            }
        }
    }
    fn append_null(&mut self) {
        self.b.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(Arc::new(self.b.finish()))
    }
}
