//! Mapped input (`ReaderBuilder::build_from_mmap`): the file as an Arrow buffer (so aligned
//! payloads are zero-copy), and pages handed back to the kernel behind the decoder so a big file
//! never stays resident.

use arrow_buffer::Buffer;
use std::sync::Arc;

use super::{Reader, ReaderBuilder};
use crate::error::Result;

impl ReaderBuilder {
    /// Read a memory-mapped file. Pages already decoded are handed back to the kernel as the read
    /// goes, so a big file never stays resident. (`build_from_path`, in [`crate::io`], opens a
    /// path: mapped when plain, decompressed on the fly when compressed.) The map must be a
    /// file's, unmodified: a dropped page is read back from the file when touched again, so the
    /// bytes of an anonymous or written private mapping would be lost; read those with
    /// [`ReaderBuilder::build_from_slice`].
    pub fn build_from_mmap(self, map: memmap2::Mmap) -> Result<Reader> {
        self.build_from_mmap_at(map, 0)
    }

    /// [`ReaderBuilder::build_from_mmap`] from byte `offset` of the map (a file object's position:
    /// error offsets count from there).
    pub fn build_from_mmap_at(self, map: memmap2::Mmap, offset: usize) -> Result<Reader> {
        let mut b = self;
        b.release_input = true;
        let buf = mmap_buffer(map);
        let offset = offset.min(buf.len());
        b.build_from_buffer(buf.slice(offset))
    }
}

/// Map a file into an Arrow buffer without copying.
pub(crate) fn mmap_buffer(m: memmap2::Mmap) -> Buffer {
    let len = m.len();
    if len == 0 {
        return Buffer::from_vec(Vec::<u8>::new());
    }
    let ptr = std::ptr::NonNull::new(m.as_ptr() as *mut u8)
        .expect("mmap of a non-empty file is non-null");
    // SAFETY: the pointer and length describe the mapping, which the Arc keeps alive as long as any
    // Buffer slice refers to it; it is never written through.
    unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(m)) }
}

/// `data`, a part of `input`, as a slice of it (zero-copy), where it starts at an address
/// aligned to `align` (what an Arrow values buffer of its elements needs).
pub(crate) fn slice_of(input: &Buffer, data: &[u8], align: usize) -> Option<Buffer> {
    let base = input.as_ptr() as usize;
    let at = (data.as_ptr() as usize).checked_sub(base)?;
    (at + data.len() <= input.len() && data.as_ptr().align_offset(align.max(1)) == 0)
        .then(|| input.slice_with_length(at, data.len()))
}

/// How far a walk over a mapped file gets before it drops the pages behind it.
pub(crate) const RELEASE_STEP: usize = 4 << 20;

/// While rows of a mapped file are walked: once `[released, pos)` adds up to [`RELEASE_STEP`],
/// drop its pages, so a batch of wide rows does not keep its part of the file resident. Returns
/// the new `released`. (Mapping the next step ahead with MADV_POPULATE_READ was tried: no gain
/// measurable on a quiet machine.)
#[inline]
pub(crate) fn release_behind(release: bool, buf: &[u8], released: usize, pos: usize) -> usize {
    if release && pos - released >= RELEASE_STEP {
        release_pages(buf, released, pos);
        pos
    } else {
        released
    }
}

/// Tell the kernel the pages of `[from, to)` are done with. Pages of a read-only file mapping are
/// read back from the page cache if touched again: this only lowers RSS. Pages of memory the read
/// holds alone ([`crate::ReaderBuilder::releasing_decoded`]) read back as zeros: only bytes never
/// read again are released there.
pub(crate) fn release_pages(buf: &[u8], from: usize, to: usize) {
    #[cfg(unix)]
    {
        let page = 4096usize;
        let base = buf.as_ptr() as usize;
        let a = (base + from).div_ceil(page) * page;
        let b = ((base + to) / page) * page;
        if b > a {
            // SAFETY: the range lies inside the allocation `buf` holds (whole pages of it, never
            // an allocator's header before it); MADV_DONTNEED changes no memory outside it.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (buf, from, to);
}
