//! Arrow lists that are msgpack lists (not tensors).

use crate::types::layout::ValueForm;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use crate::error::Result;
use crate::types::meta;
use crate::wire::write::{self as wire, Out};
use crate::write::encoder::structs::used_and_valid;
use crate::write::encoder::{make_encoder, ColumnEncoder};
use crate::write::unsupported;

pub(crate) enum ListShape {
    Fixed(usize),
    O32(OffsetBuffer<i32>),
    O64(OffsetBuffer<i64>),
    V32(ScalarBuffer<i32>, ScalarBuffer<i32>),
    V64(ScalarBuffer<i64>, ScalarBuffer<i64>),
}

impl ListShape {
    #[inline]
    pub(crate) fn range(&self, row: usize) -> (usize, usize) {
        match self {
            ListShape::Fixed(n) => (row * n, (row + 1) * n),
            ListShape::O32(o) => (o[row] as usize, o[row + 1] as usize),
            ListShape::O64(o) => (o[row] as usize, o[row + 1] as usize),
            ListShape::V32(o, s) => (o[row] as usize, (o[row] + s[row]) as usize),
            ListShape::V64(o, s) => (o[row] as usize, (o[row] + s[row]) as usize),
        }
    }
}

/// A msgpack array of the items' encodings.
pub(crate) struct ListEnc {
    pub(crate) shape: ListShape,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) child: Box<dyn ColumnEncoder>,
    pub(crate) len: usize,
    /// the length of the items' array (which may hold more than the rows use)
    pub(crate) values_len: usize,
}

impl ListEnc {
    pub(crate) fn new(arr: &ArrayRef) -> Result<Self> {
        Self::with_items(arr, false)
    }

    /// A list whose every item is written as an ndarray (its field taken as `kind: ndarray`).
    pub(crate) fn of_ndarrays(arr: &ArrayRef) -> Result<Self> {
        Self::with_items(arr, true)
    }

    fn with_items(arr: &ArrayRef, ndarrays: bool) -> Result<Self> {
        let (shape, field, values): (ListShape, &Field, &ArrayRef) = match arr.data_type() {
            DataType::FixedSizeList(f, n) => (
                ListShape::Fixed(*n as usize),
                f,
                arr.as_fixed_size_list().values(),
            ),
            DataType::List(f) => {
                let l = arr.as_list::<i32>();
                (ListShape::O32(l.offsets().clone()), f, l.values())
            }
            DataType::LargeList(f) => {
                let l = arr.as_list::<i64>();
                (ListShape::O64(l.offsets().clone()), f, l.values())
            }
            DataType::ListView(f) => {
                let l = arr.as_list_view::<i32>();
                (
                    ListShape::V32(l.offsets().clone(), l.sizes().clone()),
                    f,
                    l.values(),
                )
            }
            DataType::LargeListView(f) => {
                let l = arr.as_list_view::<i64>();
                (
                    ListShape::V64(l.offsets().clone(), l.sizes().clone()),
                    f,
                    l.values(),
                )
            }
            t => return Err(unsupported(format!("Arrow {t} is not a list"))),
        };
        let child = if ndarrays {
            let mut md = field.metadata().clone();
            md.insert(meta::KIND.to_string(), "ndarray".to_string());
            make_encoder(&field.clone().with_metadata(md), values)?
        } else {
            make_encoder(field, values)?
        };
        Ok(ListEnc {
            shape,
            nulls: arr.logical_nulls(),
            child,
            len: arr.len(),
            values_len: values.len(),
        })
    }
}

impl ColumnEncoder for ListEnc {
    fn omit_absent(&mut self, written: &super::structs::Written, used: Option<&BooleanBuffer>) {
        // the items the written rows hold: a sliced list's values array holds others too
        let rows = used_and_valid(used, self.nulls.as_ref());
        let mut items = BooleanBufferBuilder::new(self.values_len);
        items.append_n(self.values_len, false);
        for row in 0..self.len {
            if rows.as_ref().is_none_or(|r| r.value(row)) {
                let (a, b) = self.shape.range(row);
                (a..b).for_each(|j| items.set_bit(j, true));
            }
        }
        self.child.omit_absent(written, Some(&items.finish()));
    }
    fn omit_written(&self, written: &mut super::structs::Written) {
        self.child.omit_written(written);
    }
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        let (a, b) = self.shape.range(row);
        wire::array_hdr(&mut out.buf, b - a);
        for j in a..b {
            self.child.encode(j, out)?;
        }
        Ok(())
    }
    fn may_nd(&self) -> bool {
        self.child.may_nd()
    }
    fn form(&mut self, row: usize) -> Result<ValueForm> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            return Ok(ValueForm::Other);
        }
        let (a, b) = self.shape.range(row);
        Ok(ValueForm::List(b - a))
    }
    fn size_hint(&self) -> usize {
        self.child.size_hint() + self.len * 3
    }
}
