//! Arrow structs as msgpack maps.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, NullBuffer};

use crate::error::Result;
use crate::wire::spelling::Spelling;
use crate::wire::write::{self as wire, Out};
use arrow_schema::{DataType, Field};

use crate::write::encoder::{make_encoder, make_top_encoder, ColumnEncoder};

/// A map with str keys (bin where the field says so: [`crate::types::meta::KEY`]) in field order.
pub(crate) struct StructEnc {
    fields: arrow_schema::Fields,
    /// the fields' keys, one after another, in spelling `keys_spelling`
    pub(crate) keys: Vec<u8>,
    pub(crate) key_ends: Vec<usize>,
    keys_spelling: Spelling,
    pub(crate) children: Vec<Box<dyn ColumnEncoder>>,
    pub(crate) nulls: Option<NullBuffer>,
    pub(crate) len: usize,
    /// null fields left out ([`ColumnEncoder::omit_absent`]): each field's nulls, whether it has
    /// no value at all, and which fields were written so far
    pub(crate) omit: Option<Omit>,
    pub(crate) arr: ArrayRef,
}

/// The fields of a map column written so far (and of the maps inside it), kept across batches.
#[derive(Default)]
pub(crate) struct Written {
    fields: Vec<bool>,
    children: Vec<Written>,
}

pub(crate) struct Omit {
    nulls: Vec<Option<NullBuffer>>,
    no_value: Vec<bool>,
    written: Vec<bool>,
    present: Vec<bool>,
}

/// Where null cells of a map's fields are left out: marks in `present` the unwritten fields that
/// must be written (as nil) anyway, and notes in `written` what was. A reader orders fields by
/// first appearance, so a field seen for the first time brings the never-written fields before
/// it; and a field with no value at all (never written yet) goes in the first map where every
/// field before it has appeared, else it would vanish. Returns whether every field was written.
pub(crate) fn bring_unwritten(
    present: &mut [bool],
    written: &mut [bool],
    no_value: &[bool],
) -> bool {
    let first_new = (0..present.len())
        .rev()
        .find(|&c| present[c] && !written[c]);
    let mut before_seen = true;
    for (c, p) in present.iter_mut().enumerate() {
        let unwritten = !written[c];
        *p |= unwritten && (first_new.is_some_and(|j| c < j) || (no_value[c] && before_seen));
        written[c] |= *p;
        before_seen &= written[c];
    }
    before_seen
}

/// Per column of `cols`: its nulls, and whether it has no value at any of the rows `used` (`None`:
/// every row). Only rows that are written count: a struct's child may be valid under a null
/// parent, and a sliced list's items outside its rows are still in the values array.
pub(crate) fn field_nulls(
    cols: &[ArrayRef],
    used: Option<&BooleanBuffer>,
) -> (Vec<Option<NullBuffer>>, Vec<bool>) {
    let nulls: Vec<Option<NullBuffer>> = cols.iter().map(|c| c.logical_nulls()).collect();
    let no_value = nulls
        .iter()
        .map(|n| match (n, used) {
            (None, None) => false,
            (None, Some(u)) => u.count_set_bits() == 0,
            (Some(n), None) => n.null_count() == n.len(),
            (Some(n), Some(u)) => (n.inner() & u).count_set_bits() == 0,
        })
        .collect();
    (nulls, no_value)
}

/// The rows of `used` (`None`: all) where `nulls` says valid.
pub(crate) fn used_and_valid(
    used: Option<&BooleanBuffer>,
    nulls: Option<&NullBuffer>,
) -> Option<BooleanBuffer> {
    match (used, nulls) {
        (None, None) => None,
        (Some(u), None) => Some(u.clone()),
        (None, Some(n)) => Some(n.inner().clone()),
        (Some(u), Some(n)) => Some(u & n.inner()),
    }
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
        let mut children = Vec::new();
        let fields = match typed {
            DataType::Struct(fs) if fs.len() == sa.num_columns() => fs,
            _ => sa.fields(),
        };
        for (f, c) in fields.iter().zip(sa.columns()) {
            children.push(make(f, c).map_err(|e| e.prepend_path(f.name()))?);
        }
        let mut enc = StructEnc {
            fields: fields.clone(),
            keys: Vec::new(),
            key_ends: Vec::new(),
            keys_spelling: Spelling::default(),
            children,
            nulls: arr.logical_nulls(),
            len: arr.len(),
            omit: None,
            arr: arr.clone(),
        };
        enc.write_keys(Spelling::default());
        Ok(enc)
    }

    /// The fields' keys in spelling `sp` (an older packer's writes long keys in str16).
    fn write_keys(&mut self, sp: Spelling) {
        self.keys.clear();
        self.key_ends.clear();
        for f in self.fields.iter() {
            crate::write::write_key(&mut self.keys, f, sp);
            self.key_ends.push(self.keys.len());
        }
        self.keys_spelling = sp;
    }
}

impl ColumnEncoder for StructEnc {
    fn encode(&mut self, row: usize, out: &mut Out) -> Result<()> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            out.buf.push(0xc0);
            return Ok(());
        }
        if self.keys_spelling != out.spelling {
            self.write_keys(out.spelling);
        }
        let present = match &mut self.omit {
            Some(o) => {
                for (p, n) in o.present.iter_mut().zip(&o.nulls) {
                    *p = n.as_ref().is_none_or(|n| n.is_valid(row));
                }
                if !o.written.iter().all(|&w| w) {
                    bring_unwritten(&mut o.present, &mut o.written, &o.no_value);
                }
                Some(&o.present)
            }
            None => None,
        };
        let n = present.map_or(self.children.len(), |p| p.iter().filter(|&&p| p).count());
        wire::map_hdr(&mut out.buf, n);
        let mut start = 0;
        for (i, c) in self.children.iter_mut().enumerate() {
            let from = std::mem::replace(&mut start, self.key_ends[i]);
            if present.is_some_and(|p| !p[i]) {
                continue;
            }
            out.buf
                .extend_from_slice(&self.keys[from..self.key_ends[i]]);
            c.encode(row, out)
                .map_err(|e| e.prepend_path(self.fields[i].name()))?;
        }
        Ok(())
    }
    fn omit_absent(&mut self, before: &Written, used: Option<&BooleanBuffer>) {
        if self.omit.is_some() {
            return;
        }
        let used = used_and_valid(used, self.nulls.as_ref());
        let (nulls, no_value) = field_nulls(self.arr.as_struct().columns(), used.as_ref());
        let k = nulls.len();
        let written = match before.fields.len() == k {
            true => before.fields.clone(),
            false => vec![false; k],
        };
        self.omit = Some(Omit {
            nulls,
            no_value,
            written,
            present: vec![true; k],
        });
        let none = Written::default();
        for (i, c) in self.children.iter_mut().enumerate() {
            c.omit_absent(before.children.get(i).unwrap_or(&none), used.as_ref());
        }
    }
    fn omit_written(&self, after: &mut Written) {
        let Some(o) = &self.omit else { return };
        after.fields.clone_from(&o.written);
        after
            .children
            .resize_with(self.children.len(), Default::default);
        for (c, w) in self.children.iter().zip(&mut after.children) {
            c.omit_written(w);
        }
    }
    fn may_nd(&self) -> bool {
        self.children.iter().any(|c| c.may_nd())
    }
    fn size_hint(&self) -> usize {
        self.children.iter().map(|c| c.size_hint()).sum::<usize>()
            + self.len * (self.keys.len() + 1)
    }
}
