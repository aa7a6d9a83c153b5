//! Arrow structs as msgpack maps.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;

use crate::error::Result;
use crate::wire::write::{self as wire, Out};
use arrow_schema::{DataType, Field};

use crate::write::encoder::{make_encoder, make_top_encoder, ColumnEncoder};

/// A map with str keys (bin where the field says so: [`crate::types::meta::KEY`]) in field order.
pub(crate) struct StructEnc {
    pub(crate) names: Vec<String>,
    pub(crate) keys: Vec<u8>,
    pub(crate) key_ends: Vec<usize>,
    pub(crate) children: Vec<Box<dyn ColumnEncoder>>,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) len: usize,
}

impl StructEnc {
    /// `field`: the column's field in the writer's schema, whose struct fields' metadata count
    /// (it may say more than the array's own: [`crate::write::mark_ragged_ndarrays`]).
    pub(crate) fn new(field: &Field, arr: &ArrayRef) -> Result<Self> {
        Self::with_children(field.data_type(), arr, make_encoder)
    }

    /// A struct array's maps, by its own fields.
    pub(crate) fn of_array(arr: &ArrayRef) -> Result<Self> {
        Self::with_children(arr.data_type(), arr, make_encoder)
    }

    /// A top-level struct column of a batch starting at file row `row0`: its fields are encoded
    /// as top-level columns are, with the row shapes their metadata records.
    pub(crate) fn new_top(field: &Field, arr: &ArrayRef, row0: u64) -> Result<Self> {
        Self::with_children(field.data_type(), arr, |f, c| make_top_encoder(f, c, row0))
    }

    fn with_children(
        typed: &DataType,
        arr: &ArrayRef,
        mut make: impl FnMut(&Field, &ArrayRef) -> Result<Box<dyn ColumnEncoder>>,
    ) -> Result<Self> {
        let sa = arr.as_struct();
        let mut names = Vec::new();
        let mut keys = Vec::new();
        let mut key_ends = Vec::new();
        let mut children = Vec::new();
        let fields = match typed {
            DataType::Struct(fs) if fs.len() == sa.num_columns() => fs,
            _ => sa.fields(),
        };
        for (f, c) in fields.iter().zip(sa.columns()) {
            children.push(make(f, c).map_err(|e| e.prepend_path(f.name()))?);
            crate::write::write_key(&mut keys, f);
            key_ends.push(keys.len());
            names.push(f.name().clone());
        }
        Ok(StructEnc {
            names,
            keys,
            key_ends,
            children,
            nulls: arr.logical_nulls(),
            len: arr.len(),
        })
    }
}

impl ColumnEncoder for StructEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        wire::map_hdr(&mut out.buf, self.children.len());
        let mut start = 0;
        for (i, c) in self.children.iter_mut().enumerate() {
            out.buf
                .extend_from_slice(&self.keys[start..self.key_ends[i]]);
            start = self.key_ends[i];
            c.encode(row, out)
                .map_err(|e| e.prepend_path(&self.names[i]))?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.children.iter().any(|c| c.may_nd())
    }
    fn size_hint(&self) -> usize {
        self.children.iter().map(|c| c.size_hint()).sum::<usize>()
            + self.len * (self.keys.len() + 1)
    }
}
