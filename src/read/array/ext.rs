//! msgpack ext values of types other than the timestamp (field metadata kind `ext`): a struct of
//! the type code and the bytes, as Python's msgpack gives `ExtType(code, data)`.

use super::*;
use crate::error::Result;
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::ndarray::is_special_ext;
use arrow_array::builder::BinaryBuilder;
use arrow_array::*;
use arrow_buffer::{NullBufferBuilder, ScalarBuffer};
use std::sync::Arc;

pub(crate) struct ExtDecoder {
    pub(crate) codes: Vec<i8>,
    pub(crate) data: BinaryBuilder,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) ctx: Ctx,
}

impl ExtDecoder {
    pub(crate) fn new(ctx: &Ctx) -> Self {
        ExtDecoder {
            codes: Vec::new(),
            data: BinaryBuilder::with_capacity(0, 0),
            nulls: NullBufferBuilder::new(0),
            ctx: ctx.clone(),
        }
    }
}

impl ArrayDecoder for ExtDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                Ok(())
            }
            // (the npy extension's values are ndarrays, and -1 is a timestamp: neither is
            // inferred as this column's, but a caller's schema may say so)
            Kind::Ext if !is_special_ext(c, self.ctx.dialect, self.ctx.npy_ext) => {
                let at = c.pos();
                let (code, data) = c.read_ext()?;
                if code == -1 && !self.ctx.convert {
                    c.set_pos(at);
                    return Err(found(c, "ext (not a timestamp)"));
                }
                self.codes.push(code);
                self.data.append_value(data);
                self.nulls.append_non_null();
                Ok(())
            }
            _ => Err(found(c, "ext")),
        }
    }
    fn append_null(&mut self) {
        self.codes.push(0);
        self.data.append_value([]);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let DataType::Struct(fields) = crate::types::arrow::ext_type() else {
            unreachable!("ext_type is a struct")
        };
        let codes = Int8Array::new(ScalarBuffer::from(std::mem::take(&mut self.codes)), None);
        let data = self.data.finish();
        Ok(Arc::new(StructArray::try_new(
            fields,
            vec![Arc::new(codes), Arc::new(data)],
            self.nulls.finish(),
        )?))
    }
    fn reserve(&mut self, rows: usize) {
        self.codes.reserve(rows);
    }
}
