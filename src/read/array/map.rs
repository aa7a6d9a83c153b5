//! msgpack maps keyed by integers (or another non-string scalar) as Arrow `Map<key, value>`:
//! data, not records (Polars shows them as a list of `{key, value}` structs).

use super::*;
use crate::error::{ErrorKind, Result};
use crate::wire::cursor::{Cursor, Kind};
use arrow_array::*;
use arrow_buffer::{NullBufferBuilder, OffsetBuffer};
use arrow_schema::{FieldRef, Fields};
use std::sync::Arc;

pub(crate) struct MapDecoder {
    /// the `entries` struct field (`key`, `value`)
    pub(crate) entries: FieldRef,
    pub(crate) keys: Box<dyn ArrayDecoder>,
    pub(crate) values: Box<dyn ArrayDecoder>,
    pub(crate) offsets: Vec<i32>,
    pub(crate) nulls: NullBufferBuilder,
}

impl MapDecoder {
    pub(crate) fn new(entries: &FieldRef, ctx: &Ctx) -> Result<Self> {
        let DataType::Struct(kv) = entries.data_type() else {
            return Err(Error::new(ErrorKind::Unsupported(format!(
                "map entries must be a struct, not {}",
                entries.data_type()
            ))));
        };
        if kv.len() != 2 {
            return Err(Error::new(ErrorKind::Unsupported(
                "map entries must have a key and a value field".into(),
            )));
        }
        Ok(MapDecoder {
            entries: entries.clone(),
            keys: make_decoder(&kv[0], ctx).map_err(|e| e.prepend_path("key"))?,
            values: make_decoder(&kv[1], ctx).map_err(|e| e.prepend_path("value"))?,
            offsets: vec![0],
            nulls: NullBufferBuilder::new(0),
        })
    }
}

impl ArrayDecoder for MapDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
            }
            Kind::Map => {
                let n = c.read_map_len()?;
                for _ in 0..n {
                    if c.peek_kind()? == Kind::Nil {
                        return Err(c.error(ErrorKind::Key("a map key is nil".into())));
                    }
                    self.keys.decode(c)?;
                    self.values.decode(c)?;
                }
                push_offset(&mut self.offsets, n, c)?;
                self.nulls.append_non_null();
            }
            _ => return Err(found(c, "map")),
        }
        Ok(())
    }
    fn append_null(&mut self) {
        let last = *self.offsets.last().unwrap_or(&0);
        self.offsets.push(last);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let DataType::Struct(kv) = self.entries.data_type() else {
            unreachable!("checked in new")
        };
        let entries = StructArray::try_new(
            Fields::from(kv.iter().cloned().collect::<Vec<_>>()),
            vec![self.keys.finish()?, self.values.finish()?],
            None,
        )?;
        Ok(Arc::new(MapArray::try_new(
            self.entries.clone(),
            OffsetBuffer::new(offsets.into()),
            entries,
            self.nulls.finish(),
            false,
        )?))
    }
}
