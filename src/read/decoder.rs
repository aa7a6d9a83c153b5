//! The push [`Decoder`]: bytes in as they arrive, record batches out, as arrow-json's and
//! arrow-csv's decoders. It knows its schema before the first byte (given, or inferred from a
//! sample with [`crate::infer_schema`]), so it never has to see the whole input: the basis for
//! network sources, live logs and blob columns.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use super::array::Ctx;
use super::rows::RowDecoder;
use super::{project, ReaderBuilder};
use crate::error::{Error, ErrorKind, Result};
use crate::options::Layout;
use crate::types::arrow::record_batch;
use crate::types::meta;
use crate::wire::cursor::Cursor;

/// Decodes a stream of top-level msgpack objects (one row each: maps for `records`, any value for
/// `values`) pushed to it in pieces of any size.
///
/// ```
/// # fn main() -> msgpack_arrow::Result<()> {
/// use std::sync::Arc;
/// use arrow_schema::{DataType, Field, Schema};
/// use msgpack_arrow::{Layout, ReaderBuilder};
/// let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
/// let mut d = ReaderBuilder::new()
///     .with_schema(schema)
///     .with_layout(Layout::Records)
///     .build_decoder()?;
/// let bytes = b"\x81\xa2id\x01\x81\xa2id\x02";
/// // the first 5 bytes hold one whole record; the second is cut: it waits for more bytes
/// assert_eq!(d.decode(&bytes[..7])?, 5);
/// assert_eq!(d.decode(&bytes[5..])?, 5);
/// let batch = d.flush()?.unwrap();
/// assert_eq!(batch.num_rows(), 2);
/// # Ok(()) }
/// ```
pub struct Decoder {
    dec: RowDecoder,
    schema: SchemaRef,
    batch_size: usize,
    /// full also after the row that reaches this many input bytes
    batch_bytes: usize,
    max_depth: usize,
    /// rows buffered since the last flush
    rows: usize,
    /// their input bytes
    bytes: usize,
    /// the input bytes of the last of them (a big row ends its batch: `row_walk::row_alone_bytes`)
    last_len: usize,
    /// rows decoded before them
    row: u64,
    /// rows of the last batch flushed: what the next one reserves room for up front
    last_rows: usize,
    /// bytes consumed so far (positions in errors count from the first byte pushed)
    offset: u64,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("schema", &self.schema)
            .field("rows_buffered", &self.rows)
            .finish_non_exhaustive()
    }
}

impl ReaderBuilder {
    /// A push [`Decoder`] with this builder's schema (required: give it with
    /// [`ReaderBuilder::with_schema`], e.g. from [`crate::infer_schema`] over a sample), layout
    /// (`records`, `values`; `auto` takes the one recorded in the schema metadata, else
    /// `records`), projection, batch size, dialect and depth limit.
    pub fn build_decoder(self) -> Result<Decoder> {
        let full = self.schema.clone().ok_or_else(|| {
            Error::new(ErrorKind::Usage(
                "a push decoder needs the schema before the data: give it with with_schema (infer_schema over a sample finds one)".into(),
            ))
        })?;
        let layout = match self.layout {
            Layout::Auto => match full.metadata().get(meta::LAYOUT).map(String::as_str) {
                Some("values") => Layout::Values,
                _ => Layout::Records,
            },
            Layout::Columns => {
                return Err(Error::new(ErrorKind::Usage(
                    "the columns layout is one map holding every row: read it with build_from_buffer, not a push decoder".into(),
                )))
            }
            l => l,
        };
        let ctx = Ctx {
            dialect: self.dialect,
            npy_ext: self.npy_ext,
            max_depth: self.max_depth,
            strict_keys: self.strict_schema,
            given_schema: true,
            convert: !self.schema_inferred,
            overridden: None,
            input: None,
        };
        let (dec, _) = RowDecoder::new(layout, &full, self.projection.as_deref(), &ctx)?;
        let mut md = full.metadata().clone();
        md.insert(meta::LAYOUT.to_string(), layout.to_string());
        let full = Schema::new_with_metadata(full.fields().clone(), md);
        let schema = Arc::new(project(&full, self.projection.as_deref())?);
        Ok(Decoder {
            dec,
            schema,
            batch_size: self.batch_size.max(1),
            batch_bytes: self.batch_bytes,
            max_depth: self.max_depth,
            rows: 0,
            bytes: 0,
            last_len: 0,
            row: 0,
            last_rows: 0,
            offset: 0,
        })
    }
}

impl Decoder {
    /// A decoder over column decoders already made (the `Reader`'s stream path).
    pub(crate) fn from_parts(
        dec: RowDecoder,
        schema: SchemaRef,
        batch_size: usize,
        max_depth: usize,
    ) -> Self {
        Decoder {
            dec,
            schema,
            batch_size: batch_size.max(1),
            batch_bytes: super::DEFAULT_BATCH_BYTES,
            max_depth,
            rows: 0,
            bytes: 0,
            last_len: 0,
            row: 0,
            last_rows: 0,
            offset: 0,
        }
    }

    pub(crate) fn with_batch_bytes(mut self, n: usize) -> Self {
        self.batch_bytes = n.max(1);
        self
    }

    /// Rows flushed so far.
    pub(crate) fn rows_flushed(&self) -> u64 {
        self.row
    }

    /// Decode the whole objects at the start of `buf`, up to the batch size; returns how many
    /// bytes were consumed. An object cut at the end of `buf` is left for the next call, which
    /// must pass those bytes again followed by more. When it returns less than `buf.len()` with
    /// [`Decoder::len`] equal to the batch size, [`Decoder::flush`] before pushing the rest.
    pub fn decode(&mut self, buf: &[u8]) -> Result<usize> {
        let mut pos = 0;
        while !self.is_full() && pos < buf.len() {
            // find the object's end first: decoders append as they go and cannot take back
            // half an object
            let mut c = Cursor::new(buf, self.offset);
            c.set_pos(pos);
            match c.skip(self.max_depth) {
                Ok(()) => {}
                Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) => break,
                Err(e) => return Err(e.at_record(self.row + self.rows as u64)),
            }
            let end = c.pos();
            if self.rows == 0 && self.last_rows > 0 {
                // a batch's columns sized like the last one's: grown by doubling, each batch's
                // buffers were copied over again and faulted in afresh (a third of a stream's read)
                self.dec.reserve(self.last_rows.min(self.batch_size));
            }
            let mut c = Cursor::new(&buf[..end], self.offset);
            c.set_pos(pos);
            let at = c.offset();
            self.dec
                .decode(&mut c)
                .map_err(|e| e.at_offset(at).at_record(self.row + self.rows as u64))?;
            self.rows += 1;
            self.bytes += end - pos;
            self.last_len = end - pos;
            pos = end;
        }
        self.offset += pos as u64;
        Ok(pos)
    }

    /// The rows decoded since the last flush as a batch; `None` when there are none.
    pub fn flush(&mut self) -> Result<Option<RecordBatch>> {
        if self.rows == 0 {
            return Ok(None);
        }
        let cols = self.dec.finish()?;
        let b = record_batch(&self.schema, cols, self.rows)?;
        self.last_rows = self.rows;
        self.row += self.rows as u64;
        self.rows = 0;
        self.bytes = 0;
        self.last_len = 0;
        Ok(Some(b))
    }

    /// Rows decoded and not yet flushed.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no rows wait for a flush.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether as many rows as the batch size, or as many input bytes as the batch's byte bound
    /// ([`ReaderBuilder::with_batch_bytes`]), or a row of a 16th of that bound (at least 1 MiB),
    /// wait for a flush.
    pub fn is_full(&self) -> bool {
        self.rows >= self.batch_size
            || self.bytes >= self.batch_bytes
            || self.last_len >= super::row_walk::row_alone_bytes(self.batch_bytes)
    }

    /// The schema of the batches (projection applied).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriterBuilder;
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field};

    fn table(rows: usize) -> RecordBatch {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("emb", DataType::FixedSizeList(item.clone(), 3), true),
        ]));
        let emb = FixedSizeListArray::new(
            item,
            3,
            Arc::new(Float32Array::from_iter_values(
                (0..rows * 3).map(|i| i as f32 * 0.5),
            )),
            None,
        );
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows as i64)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("row{i}")),
                )),
                Arc::new(emb),
            ],
        )
        .unwrap()
    }

    fn bytes(b: &RecordBatch) -> Vec<u8> {
        let mut w = WriterBuilder::new()
            .with_layout(Layout::Records)
            .build(Vec::new(), b.schema())
            .unwrap();
        w.write(b).unwrap();
        w.finish().unwrap()
    }

    /// Push `data` in pieces of `step` bytes, as a network source would, flushing when full.
    fn push_all(d: &mut Decoder, data: &[u8], step: usize) -> Vec<RecordBatch> {
        let mut out = Vec::new();
        let (mut start, mut have) = (0, 0);
        while start < data.len() {
            have = (have + step).min(data.len()).max(start);
            let used = d.decode(&data[start..have]).unwrap();
            start += used;
            if d.is_full() {
                out.extend(d.flush().unwrap());
            } else if used == 0 && have == data.len() {
                panic!("stuck at {start}");
            }
        }
        out.extend(d.flush().unwrap());
        out
    }

    #[test]
    fn pieces_of_any_size_give_the_reader_s_table() {
        let t = table(50);
        let data = bytes(&t);
        let whole = ReaderBuilder::new().build_from_slice(&data).unwrap();
        let schema = whole.schema();
        let want: Vec<RecordBatch> = whole.map(|b| b.unwrap()).collect();
        let want = arrow_select::concat::concat_batches(&schema, &want).unwrap();
        for step in [1, 7, 64, 1000, data.len()] {
            let mut d = ReaderBuilder::new()
                .with_schema(schema.clone())
                .with_batch_size(16)
                .build_decoder()
                .unwrap();
            let got = push_all(&mut d, &data, step);
            assert!(got.iter().all(|b| b.num_rows() <= 16));
            let got = arrow_select::concat::concat_batches(&d.schema(), &got).unwrap();
            assert_eq!(got.columns(), want.columns(), "step {step}");
            assert_eq!(d.offset(), data.len() as u64);
        }
    }

    #[test]
    fn errors_name_the_byte_and_record_across_pushes_and_a_schema_is_required() {
        let t = table(3);
        let mut data = bytes(&t);
        let schema = ReaderBuilder::new()
            .build_from_slice(&data)
            .unwrap()
            .schema();
        // the third record's id becomes a string: the decoder's type says Int64
        let third = data.len() - bytes(&t.slice(2, 1)).len();
        let id_at = third + 4; // fixmap, fixstr "id" (3 bytes), then the value
        assert_eq!(data[id_at], 2);
        data[id_at] = 0xa1; // a one-char str eats the next byte: still valid msgpack
        let mut d = ReaderBuilder::new()
            .with_schema(schema)
            .build_decoder()
            .unwrap();
        let n = d.decode(&data[..third]).unwrap();
        assert_eq!(n, third);
        let e = d.decode(&data[third..]).unwrap_err();
        assert_eq!(e.record(), Some(2), "{e}");
        assert_eq!(e.offset(), Some(id_at as u64), "{e}");
        let e = ReaderBuilder::new().build_decoder().unwrap_err();
        assert!(e.to_string().contains("needs the schema"), "{e}");
    }
}
