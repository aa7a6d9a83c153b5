//! str and bin columns (and numpy `U`/`S` scalars).

use super::*;
use crate::error::{ErrorKind, Result};
use crate::types::buffers::to_arrow;
use crate::types::NumpyDtype;
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::ndarray::{probe, Special};
use arrow_array::builder::{ArrayBuilder, BinaryBuilder};
use arrow_array::types::*;
use arrow_array::*;
use std::sync::Arc;

pub(crate) struct BytesDecoder {
    pub(crate) b: BinaryBuilder,
    pub(crate) utf8: bool,
    pub(crate) ctx: Ctx,
}

impl ArrayDecoder for BytesDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        // short ASCII strings (names, labels, tags: most strings) from the marker byte at once;
        // the general path looks the marker up three times
        if self.utf8 {
            if let Some(s) = c.peek_fixstr().filter(|s| s.is_ascii()) {
                c.set_pos(c.pos() + 1 + s.len());
                self.b.append_value(s);
                return Ok(());
            }
        }
        match c.peek_kind()? {
            Kind::Str if self.utf8 => {
                let s = c.read_str()?;
                self.b.append_value(s);
            }
            // old writers used raw (str) for bytes (which inference reads as str: a column
            // inferred bin takes only bin)
            Kind::Bin if !self.utf8 => {
                let (b, _) = c.read_str_or_bin()?;
                self.b.append_value(b);
            }
            Kind::Str if !self.utf8 && self.ctx.convert => {
                let (b, _) = c.read_str_or_bin()?;
                self.b.append_value(b);
            }
            Kind::Nil => {
                c.read_nil()?;
                self.b.append_null();
            }
            // a column given the String type (schema overrides): scalars as Python's str() writes them
            Kind::Int | Kind::F32 | Kind::F64 | Kind::Bool if self.utf8 && self.ctx.convert => {
                let mut s = String::new();
                match c.peek_kind()? {
                    Kind::Int => match c.read_int()? {
                        Int::I(v) => s = v.to_string(),
                        Int::U(v) => s = v.to_string(),
                    },
                    Kind::Bool => s.push_str(if c.read_bool()? { "True" } else { "False" }),
                    k => {
                        let x = if k == Kind::F32 {
                            c.read_f32()? as f64
                        } else {
                            c.read_f64()?
                        };
                        crate::wire::pyrepr::py_float_repr(x, false, &mut s);
                        if x.is_finite() && !s.contains(['.', 'e']) {
                            s.push_str(".0");
                        }
                    }
                }
                self.b.append_value(s);
            }
            Kind::Map if self.ctx.convert => {
                // a 0-d U/S array
                let start = c.pos();
                let Some(Special::Array(nd)) =
                    probe(c, self.ctx.dialect, self.ctx.npy_ext, self.ctx.max_depth)?
                else {
                    c.set_pos(start);
                    return Err(found(c, if self.utf8 { "str" } else { "bin" }));
                };
                let dt = nd.parse_dtype(c.offset_of(nd.type_pos))?;
                nd.check_len(&dt, c.offset_of(0))?;
                let ok = matches!(
                    (&dt, self.utf8),
                    (NumpyDtype::Unicode { .. }, true) | (NumpyDtype::Bytes { .. }, false)
                );
                if !ok || nd.len != 1 {
                    c.set_pos(start);
                    return Err(c.error(ErrorKind::TypeConflict(format!(
                        "expected a string, found ndarray {}",
                        dt.to_dtype_str()
                    ))));
                }
                let a = to_arrow(&dt, arrow_buffer::Buffer::from(&*nd.data), 1, false, None)?;
                let a = a
                    .as_any()
                    .downcast_ref::<GenericByteArray<GenericStringType<i32>>>()
                    .map(|s| s.value(0).as_bytes().to_vec())
                    .or_else(|| {
                        a.as_any()
                            .downcast_ref::<BinaryArray>()
                            .map(|s| s.value(0).to_vec())
                    })
                    .unwrap_or_default();
                self.b.append_value(a);
            }
            _ => return Err(found(c, if self.utf8 { "str" } else { "bin" })),
        }
        Ok(())
    }
    fn append_null(&mut self) {
        self.b.append_null();
    }
    fn append_nulls(&mut self, n: usize) {
        self.b.append_nulls(n);
    }
    fn reserve(&mut self, rows: usize) {
        // (made empty: `BinaryBuilder::new()` holds room for 1,024 values, which every batch's
        // array kept: 4,286 batches of 7 rows of one string column held 70 MB)
        if self.b.len() == 0 {
            self.b = BinaryBuilder::with_capacity(rows, 0);
        }
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let a = self.b.finish();
        Ok(if self.utf8 {
            let (offsets, values, nulls) = a.into_parts();
            // SAFETY: every value appended was checked to be UTF-8 (read_str or numpy U decoding).
            Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
        } else {
            Arc::new(a)
        })
    }
}
