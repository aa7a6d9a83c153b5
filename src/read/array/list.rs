//! msgpack lists of values as Arrow lists.

use super::*;
use crate::error::Result;
use crate::wire::cursor::{Cursor, Kind};
use arrow_array::*;
use arrow_buffer::{NullBufferBuilder, OffsetBuffer};
use arrow_schema::FieldRef;
use std::sync::Arc;

pub(crate) struct ListDecoder {
    pub(crate) item: FieldRef,
    pub(crate) child: Box<dyn ArrayDecoder>,
    pub(crate) offsets: Vec<i32>,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) ctx: Ctx,
}

impl ArrayDecoder for ListDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
            }
            Kind::Array => {
                let n = c.read_array_len()?;
                for _ in 0..n {
                    self.child.decode(c)?;
                }
                push_offset(&mut self.offsets, n, c)?;
                self.nulls.append_non_null();
            }
            _ => return Err(found(c, "array")),
        }
        let _ = self.ctx.max_depth;
        Ok(())
    }
    fn append_null(&mut self) {
        let last = *self.offsets.last().unwrap_or(&0);
        self.offsets.push(last);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let values = self.child.finish()?;
        Ok(Arc::new(ListArray::try_new(
            self.item.clone(),
            OffsetBuffer::new(offsets.into()),
            values,
            self.nulls.finish(),
        )?))
    }
}
