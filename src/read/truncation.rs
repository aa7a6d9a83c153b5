//! Where an input cut short was cut ([`crate::OnTruncated::Keep`]): the end of its last complete
//! top-level object, so a dump from a crashed writer, or one still being written, reads up to it.

use crate::error::ErrorKind;
use crate::wire::cursor::Cursor;

/// Where an input read with [`crate::OnTruncated::Keep`] was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// Byte offset of the first incomplete object (the bytes from here on were not read).
    pub offset: u64,
    /// Complete top-level objects kept before it.
    pub objects: u64,
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "input cut at byte {}: kept the {} complete object{} before it",
            self.offset,
            self.objects,
            if self.objects == 1 { "" } else { "s" }
        )
    }
}

/// The end of the last complete top-level object, when the input is cut after it (`None`: not
/// cut, or broken in another way, which the reader then reports).
pub(crate) fn complete_prefix(data: &[u8], max_depth: usize) -> Option<Truncation> {
    let mut c = Cursor::new(data, 0);
    let mut objects = 0u64;
    while !c.is_empty() {
        let at = c.pos();
        match c.skip(max_depth) {
            Ok(()) => objects += 1,
            Err(e) if matches!(e.kind(), ErrorKind::Truncated { .. }) => {
                return Some(Truncation {
                    offset: at as u64,
                    objects,
                })
            }
            Err(_) => return None,
        }
    }
    None
}
