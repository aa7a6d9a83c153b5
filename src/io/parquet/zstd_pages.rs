//! zstd pages compressed with one context per thread, for the column writers of [`super::dense_leaf`].
//!
//! Why: the parquet crate's column writer creates its codec, a zstd compressor and a
//! decompressor, for every column chunk, and each creation runs `cpuid` (zstd's check for BMI2).
//! On a virtual machine that instruction traps to the hypervisor: a map of 10,000 columns of 100
//! rows spent 38% of its Parquet export creating contexts. Those column writers are given
//! uncompressed properties instead, and this page writer compresses each page as the crate's
//! codec would (the whole page of a v1 data page, the dictionary page; same level, same bytes)
//! with a context kept per thread. [`with_codec`] then names the codec in the chunk's metadata.

use std::cell::RefCell;

use bytes::Bytes;
use parquet::basic::{Compression, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriteSpec, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};

/// A page writer that zstd-compresses each page before `inner` writes it.
pub(crate) struct ZstdPages<P> {
    inner: P,
    level: ZstdLevel,
}

impl<P: PageWriter> ZstdPages<P> {
    pub(crate) fn new(inner: P, level: ZstdLevel) -> Self {
        ZstdPages { inner, level }
    }
}

impl<P: PageWriter> PageWriter for ZstdPages<P> {
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec> {
        let level = self.level.compression_level();
        let packed = match page.compressed_page() {
            Page::DataPage {
                buf,
                num_values,
                encoding,
                def_level_encoding,
                rep_level_encoding,
                statistics,
            } => Page::DataPage {
                buf: compress(buf, level)?,
                num_values: *num_values,
                encoding: *encoding,
                def_level_encoding: *def_level_encoding,
                rep_level_encoding: *rep_level_encoding,
                statistics: statistics.clone(),
            },
            Page::DictionaryPage {
                buf,
                num_values,
                encoding,
                is_sorted,
            } => Page::DictionaryPage {
                buf: compress(buf, level)?,
                num_values: *num_values,
                encoding: *encoding,
                is_sorted: *is_sorted,
            },
            // a v2 page compresses its values only, and says so in its header: the column
            // writer must do it (the writer properties here ask for v1 pages)
            Page::DataPageV2 { .. } => {
                return Err(ParquetError::General(
                    "zstd pages: a v2 data page reached the v1 page compressor".into(),
                ))
            }
        };
        self.inner
            .write_page(CompressedPage::new(packed, page.uncompressed_size()))
    }

    fn close(&mut self) -> Result<()> {
        self.inner.close()
    }
}

/// `close` of a column chunk whose pages [`ZstdPages`] compressed: its metadata names the codec.
pub(crate) fn with_codec(
    mut close: ColumnCloseResult,
    level: ZstdLevel,
) -> Result<ColumnCloseResult> {
    close.metadata = close
        .metadata
        .into_builder()
        .set_compression(Compression::ZSTD(level))
        .build()?;
    Ok(close)
}

thread_local! {
    /// This thread's compressor, and the level it was made for.
    static CONTEXT: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
}

fn compress(buf: &[u8], level: i32) -> Result<Bytes> {
    let failed = |e: std::io::Error| ParquetError::External(Box::new(e));
    CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        let c = match &mut *slot {
            Some((l, c)) if *l == level => c,
            other => {
                &mut other
                    .insert((level, zstd::bulk::Compressor::new(level).map_err(failed)?))
                    .1
            }
        };
        Ok(Bytes::from(c.compress(buf).map_err(failed)?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reused context gives what a fresh one gives (the parquet crate's codec makes one per
    /// column chunk), whatever came before it, at any level.
    #[test]
    fn a_reused_context_compresses_as_a_fresh_one() {
        let pages: Vec<Vec<u8>> = (0..6u32)
            .map(|k| {
                (0..1000 + 700 * k)
                    .map(|i| (i * (k + 3) % 251) as u8)
                    .collect()
            })
            .collect();
        for level in [1, 3, 9, 3] {
            for p in &pages {
                let fresh = zstd::bulk::compress(p, level).unwrap();
                assert_eq!(
                    &compress(p, level).unwrap()[..],
                    &fresh[..],
                    "level {level}"
                );
            }
        }
    }
}
