//! Columns of msgpack ext values (field metadata kind `ext`, a struct of `code` and `data`):
//! each written back as the ext value it was read from.

use arrow_array::cast::AsArray;
use arrow_array::types::Int8Type;
use arrow_array::{Array, ArrayRef, Int8Array, StructArray};

use crate::error::{Error, ErrorKind, Result};
use crate::wire::write::{self as wire, Out};
use crate::write::access::Bins;
use crate::write::encoder::ColumnEncoder;

/// One ext value per row; a null row is nil.
pub(crate) struct ExtEnc {
    rows: StructArray,
    codes: Int8Array,
    data: Bins,
}

impl ExtEnc {
    /// The encoder of `arr` when it is a struct of an Int8 `code` and a binary `data`.
    pub(crate) fn new(arr: &ArrayRef) -> Option<Self> {
        let rows = arr.as_struct_opt()?.clone();
        let codes = rows
            .column_by_name("code")?
            .as_primitive_opt::<Int8Type>()?
            .clone();
        let data = Bins::new(rows.column_by_name("data")?.as_ref())?;
        Some(ExtEnc { rows, codes, data })
    }
}

impl ColumnEncoder for ExtEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.rows.is_null(row) {
            out.buf.push(0xc0);
            return Ok(());
        }
        if self.codes.is_null(row) || self.data.is_null(row) {
            return Err(Error::new(ErrorKind::Unsupported(
                "an ext value without its code or data".into(),
            )));
        }
        wire::ext(&mut out.buf, self.codes.value(row), self.data.value(row)).ok_or_else(|| {
            Error::new(ErrorKind::Unsupported(
                "an ext value of 2^32 bytes or more".into(),
            ))
        })
    }
    fn size_hint(&self) -> usize {
        self.data.bytes_hint() + 6 * self.data.len()
    }
}
