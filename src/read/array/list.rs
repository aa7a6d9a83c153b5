//! msgpack lists of values as Arrow lists, and (`lists="array"`) lists of one length as
//! FixedSizeLists.

use super::*;
use crate::error::Result;
use crate::wire::cursor::{Cursor, Kind};
use arrow_array::*;
use arrow_buffer::{NullBufferBuilder, OffsetBuffer};
use arrow_schema::{DataType, FieldRef};
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
                self.child.decode_n(c, n)?;
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

/// msgpack lists that all have `n` items, as a FixedSizeList: a null row takes `n` null items.
/// A list of another length is a positioned error.
pub(crate) struct FixedListDecoder {
    pub(crate) item: FieldRef,
    pub(crate) n: usize,
    pub(crate) child: Box<dyn ArrayDecoder>,
    pub(crate) nulls: NullBufferBuilder,
}

impl FixedListDecoder {
    /// The decoder for `FixedSizeList(item, n)`; nested FixedSizeLists are lists of one length too.
    pub(crate) fn new(item: &FieldRef, n: i32, ctx: &Ctx) -> Result<Self> {
        let child: Box<dyn ArrayDecoder> = match item.data_type() {
            DataType::FixedSizeList(inner, m) => Box::new(FixedListDecoder::new(inner, *m, ctx)?),
            _ => make_decoder(item, ctx)?,
        };
        Ok(FixedListDecoder {
            item: item.clone(),
            n: n as usize,
            child,
            nulls: NullBufferBuilder::new(0),
        })
    }
}

impl ArrayDecoder for FixedListDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
            }
            Kind::Array => {
                let start = c.pos();
                let n = c.read_array_len()?;
                if n != self.n {
                    return Err(c.error_at(
                        start,
                        crate::error::ErrorKind::TypeConflict(format!(
                            "expected a list of {} items (lists=\"array\" read one length), found {n}",
                            self.n
                        )),
                    ));
                }
                self.child.decode_n(c, n)?;
                self.nulls.append_non_null();
            }
            _ => return Err(found(c, "array")),
        }
        Ok(())
    }
    fn append_null(&mut self) {
        for _ in 0..self.n {
            self.child.append_null();
        }
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let values = self.child.finish()?;
        Ok(Arc::new(FixedSizeListArray::try_new(
            self.item.clone(),
            self.n as i32,
            values,
            self.nulls.finish(),
        )?))
    }
}
