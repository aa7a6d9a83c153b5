//! msgpack maps as Arrow structs: keys to fields, missing keys to nulls.

use super::*;
use crate::error::{ErrorKind, Result};
use crate::wire::cursor::{Cursor, Kind};
use crate::wire::keys::{key_eq, KeyIndex};
use crate::wire::skip_memo::SkipMemo;
use arrow_array::*;
use arrow_buffer::NullBufferBuilder;
use arrow_schema::Fields;
use std::collections::HashMap;
use std::sync::Arc;

/// A field of a [`StructDecoder`]: its decoder and its state in the current batch, side by side
/// (a value of a sparse table's 2,000 columns touched three arrays' lines, now one).
pub(crate) struct Child {
    /// `None` for a field projected out
    pub(crate) dec: Option<Box<dyn ArrayDecoder>>,
    /// `stamp == gen`: seen in the current map (twice is an error)
    pub(crate) stamp: u64,
    /// rows the decoder holds: the maps that lacked the field are appended as nulls at once when
    /// it is next seen or the batch ends (a sparse table's 1,800 absent keys a record were 1,800
    /// calls a record, most of the read)
    pub(crate) filled: usize,
}

/// Decodes maps into a struct: used for nested maps and for the records of the `records` layout.
pub(crate) struct StructDecoder {
    pub(crate) fields: Fields,
    pub(crate) names: Vec<Box<[u8]>>,
    /// per field: its decoder and what this batch did with it
    pub(crate) children: Vec<Child>,
    /// the decoded fields' indices in output order (the projection's order, fixed here once)
    pub(crate) order: Vec<usize>,
    pub(crate) lookup: KeyIndex,
    pub(crate) gen: u64,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) len: usize,
    pub(crate) ctx: Ctx,
    /// per field, with a projection: the last value of a field projected out, to skip the next
    /// one by its bytes ([`SkipMemo`])
    pub(crate) skip_memos: Vec<SkipMemo>,
}

impl StructDecoder {
    /// `projection`: names to decode (others are skipped); `None`: all.
    pub(crate) fn new(fields: Fields, projection: Option<&[String]>, ctx: &Ctx) -> Result<Self> {
        let mut children = Vec::with_capacity(fields.len());
        // (by hash: a projection of 65,535 columns was quadratic here)
        let position: Option<HashMap<&str, usize>> = projection.map(|_| {
            fields
                .iter()
                .enumerate()
                .map(|(i, f)| (f.name().as_str(), i))
                .collect()
        });
        let projected: Option<std::collections::HashSet<&str>> =
            projection.map(|p| p.iter().map(String::as_str).collect());
        for f in fields.iter() {
            let wanted = projected
                .as_ref()
                .is_none_or(|p| p.contains(f.name().as_str()));
            let dec = if wanted {
                Some(
                    make_decoder(f, &ctx.for_column(f.name()))
                        .map_err(|e| e.prepend_path(f.name()))?,
                )
            } else {
                None
            };
            children.push(Child {
                dec,
                stamp: 0,
                filled: 0,
            });
        }
        let order = match projection {
            None => (0..fields.len()).collect(),
            Some(p) => {
                let at = position.as_ref().expect("made for a projection");
                p.iter()
                    .filter_map(|n| at.get(n.as_str()).copied())
                    .collect()
            }
        };
        let names: Vec<Box<[u8]>> = fields.iter().map(|f| f.name().as_bytes().into()).collect();
        let lookup = KeyIndex::new(names.iter().map(|n| &n[..]));
        let skip_memos = match projection {
            Some(_) => vec![SkipMemo::default(); fields.len()],
            None => Vec::new(),
        };
        Ok(StructDecoder {
            skip_memos,
            fields,
            names,
            children,
            order,
            lookup,
            gen: 0,
            nulls: NullBufferBuilder::new(0),
            len: 0,
            ctx: ctx.clone(),
        })
    }

    /// The fields that are decoded (projection applied).
    pub(crate) fn output_fields(&self) -> Fields {
        self.order.iter().map(|&i| self.fields[i].clone()).collect()
    }

    /// Decode one map.
    #[inline]
    pub(crate) fn decode_map(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        let n = match c.peek_kind()? {
            Kind::Map => c.read_map_len()?,
            _ => return Err(found(c, "map")),
        };
        self.gen += 1;
        for i in 0..n {
            let kp = c.pos();
            let key = match c.peek_fixstr() {
                Some(k) => {
                    c.set_pos(kp + 1 + k.len());
                    k
                }
                None => match c.peek_kind()? {
                    Kind::Str | Kind::Bin => c.read_str_or_bin()?.0,
                    _ => {
                        c.set_pos(kp);
                        crate::read::infer::read_key(c)?;
                        unreachable!("read_key errors on non-string keys")
                    }
                },
            };
            // records usually repeat the key order: try the same position first
            let col = if self.names.get(i).is_some_and(|k| key_eq(k, key)) {
                i
            } else {
                match self.lookup.get(key) {
                    Some(j) => j,
                    None => {
                        let name = std::str::from_utf8(key).map_err(|_| {
                            c.error_at(
                                kp,
                                ErrorKind::Key(format!(
                                    "key {:?} is not valid UTF-8",
                                    String::from_utf8_lossy(key)
                                )),
                            )
                        })?;
                        if self.ctx.strict_keys {
                            return Err(c.error_at(kp, unknown_key(name, &self.ctx)));
                        }
                        c.skip(self.ctx.max_depth)?;
                        continue;
                    }
                }
            };
            let ch = &mut self.children[col];
            if ch.stamp == self.gen {
                return Err(c.error_at(
                    kp,
                    ErrorKind::Key(format!(
                        "duplicate key {:?} in one map",
                        String::from_utf8_lossy(key)
                    )),
                ));
            }
            ch.stamp = self.gen;
            match &mut ch.dec {
                Some(d) => {
                    let gap = self.len - ch.filled;
                    if gap > 0 {
                        d.append_nulls(gap);
                    }
                    d.decode(c)
                        .map_err(|e| e.prepend_path(self.fields[col].name()))?;
                    ch.filled = self.len + 1;
                }
                None => match self.skip_memos.get_mut(col) {
                    Some(m) => m.skip(c, self.ctx.max_depth)?,
                    None => c.skip(self.ctx.max_depth)?,
                },
            }
        }
        self.len += 1;
        Ok(())
    }

    /// Append to every field the nulls of the maps that lacked it (before its array is made).
    fn fill_nulls(&mut self) {
        for ch in self.children.iter_mut() {
            if let Some(d) = &mut ch.dec {
                if ch.filled < self.len {
                    d.append_nulls(self.len - ch.filled);
                }
            }
            ch.filled = 0;
        }
    }

    /// Finish the decoded columns (for a batch).
    pub(crate) fn finish_columns(&mut self) -> Result<Vec<ArrayRef>> {
        self.fill_nulls();
        self.len = 0;
        let mut done: Vec<Option<ArrayRef>> = Vec::with_capacity(self.children.len());
        for (f, ch) in self.fields.iter().zip(self.children.iter_mut()) {
            done.push(match &mut ch.dec {
                Some(d) => Some(d.finish().map_err(|e| e.prepend_path(f.name()))?),
                None => None,
            });
        }
        // a column named twice in the projection is the same array twice
        Ok(self.order.iter().filter_map(|&i| done[i].clone()).collect())
    }

    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        for d in self.children.iter_mut().filter_map(|ch| ch.dec.as_mut()) {
            d.reserve(rows);
        }
    }
}

impl ArrayDecoder for StructDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        if c.peek_kind()? == Kind::Nil {
            c.read_nil()?;
            self.append_null();
            return Ok(());
        }
        self.decode_map(c)?;
        self.nulls.append_non_null();
        Ok(())
    }
    fn append_null(&mut self) {
        // (its fields' nulls are appended when they are next seen or the batch ends)
        self.len += 1;
        self.nulls.append_null();
    }
    fn append_nulls(&mut self, n: usize) {
        self.len += n;
        self.nulls.append_n_nulls(n);
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let n = self.len;
        let cols = self.finish_columns()?;
        let nulls = self.nulls.finish();
        let fields = self.output_fields();
        if fields.is_empty() {
            return Ok(Arc::new(StructArray::new_empty_fields(n, nulls)));
        }
        Ok(Arc::new(StructArray::try_new(fields, cols, nulls)?))
    }
    fn reserve(&mut self, rows: usize) {
        self.reserve_rows(rows);
    }
}
