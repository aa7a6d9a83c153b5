//! LZ4 frame inputs read whole and only whole. `lz4_flex`'s frame decoder takes an input that
//! stops at a block boundary, or inside a frame's header, for a complete one (a cut `.lz4` file
//! read as fewer rows, or none, without a word, where `lz4 -d` says "Unfinished stream"), and it
//! ends its output at the end of the first frame (the frames after it, as `cat a.lz4 b.lz4`
//! makes, were dropped). [`decoder`] reads every frame, and [`Lz4Frames`] sits under the decoder
//! following the frames' structure (headers, block sizes, end marks, checksums, skippable frames;
//! not the compressed bytes, which the decoder checks): an input that ends anywhere but between
//! frames is an error.

use std::io::{self, Read};

/// The LZ4 frame magic number.
const FRAME: u32 = 0x184D_2204;
/// Skippable frames: magic numbers 0x184D2A50..=0x184D2A5F.
const SKIPPABLE: u32 = 0x184D_2A50;

#[derive(Debug, Clone, Copy)]
enum State {
    /// A frame's 4 magic bytes (between frames: the input may end here, before the first).
    Magic,
    /// The frame descriptor's FLG byte.
    Flg,
    /// A block's 4-byte size, or the end mark (0).
    BlockSize,
    /// A skippable frame's 4-byte size.
    SkippableSize,
    /// This many bytes (header, block data and checksum, skipped frame), then the next field.
    Skip(u64, Then),
    /// A legacy frame or bytes that are no frame: not followed (the decoder says what is wrong).
    Untracked,
}

#[derive(Debug, Clone, Copy)]
enum Then {
    Block,
    Frame,
}

/// The decompressed bytes of every LZ4 frame of `r`, an error where `r` ends inside one.
pub(crate) fn decoder<R: Read>(r: R) -> impl Read {
    Frames(lz4_flex::frame::FrameDecoder::new(io::BufReader::new(
        Lz4Frames::new(r),
    )))
}

struct Frames<R: Read>(lz4_flex::frame::FrameDecoder<io::BufReader<Lz4Frames<R>>>);

impl<R: Read> Read for Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = match self.0.read(buf) {
                Ok(n) => n,
                Err(e) => match skippable(&e) {
                    // the decoder read the frame's magic number and size: its bytes are stepped
                    // over, as `lz4 -d` does
                    Some(len) => {
                        let under = self.0.get_mut();
                        let skipped = io::copy(&mut under.take(len), &mut io::sink())?;
                        if skipped < len {
                            return Err(io::Error::new(
                                io::ErrorKind::InvalidData,
                                "it ends inside a skippable LZ4 frame",
                            ));
                        }
                        continue;
                    }
                    None => return Err(e),
                },
            };
            // the decoder says 0 at the end of each frame: the input's end is the source's
            let under = self.0.get_ref();
            if n > 0 || buf.is_empty() || (under.get_ref().ended && under.buffer().is_empty()) {
                return Ok(n);
            }
        }
    }
}

/// The length of the skippable frame the decoder stopped at (it reads none).
fn skippable(e: &io::Error) -> Option<u64> {
    match e.get_ref()?.downcast_ref::<lz4_flex::frame::Error>()? {
        lz4_flex::frame::Error::SkippableFrame(n) => Some(u64::from(*n)),
        _ => None,
    }
}

/// Reads `inner`, following its LZ4 frames; an end inside a frame is an `InvalidData` error
/// (the decoder takes `UnexpectedEof` for a clean end).
pub(crate) struct Lz4Frames<R> {
    inner: R,
    state: State,
    field: [u8; 4],
    have: usize,
    flg: u8,
    /// `inner` has ended
    ended: bool,
}

impl<R> Lz4Frames<R> {
    pub(crate) fn new(inner: R) -> Self {
        Lz4Frames {
            inner,
            state: State::Magic,
            field: [0; 4],
            have: 0,
            flg: 0,
            ended: false,
        }
    }

    fn follow(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let need = match self.state {
                State::Untracked => return,
                State::Skip(n, then) => {
                    let k = n.min(bytes.len() as u64);
                    bytes = &bytes[k as usize..];
                    self.state = match (n - k, then) {
                        (0, Then::Block) => State::BlockSize,
                        (0, Then::Frame) => State::Magic,
                        (left, _) => State::Skip(left, then),
                    };
                    continue;
                }
                State::Flg => 1,
                State::Magic | State::BlockSize | State::SkippableSize => 4,
            };
            let k = (need - self.have).min(bytes.len());
            self.field[self.have..self.have + k].copy_from_slice(&bytes[..k]);
            (self.have, bytes) = (self.have + k, &bytes[k..]);
            if self.have < need {
                return;
            }
            self.have = 0;
            let v = u32::from_le_bytes(self.field);
            self.state = match self.state {
                State::Magic if v == FRAME => State::Flg,
                State::Magic if v & !0xF == SKIPPABLE => State::SkippableSize,
                State::Magic => State::Untracked,
                State::Flg => {
                    self.flg = self.field[0];
                    // BD, the content size and dictionary id where FLG has them, HC
                    let rest = 2 + 8 * u64::from(self.flg >> 3 & 1) + 4 * u64::from(self.flg & 1);
                    State::Skip(rest, Then::Block)
                }
                State::SkippableSize => State::Skip(u64::from(v), Then::Frame),
                State::BlockSize if v == 0 => match self.flg >> 2 & 1 {
                    // the end mark, then the content checksum where FLG has one
                    1 => State::Skip(4, Then::Frame),
                    _ => State::Magic,
                },
                State::BlockSize => State::Skip(
                    u64::from(v & 0x7FFF_FFFF) + 4 * u64::from(self.flg >> 4 & 1),
                    Then::Block,
                ),
                s @ (State::Skip(..) | State::Untracked) => s,
            };
            // nothing to skip (an empty skippable frame): the next field at once
            self.state = match self.state {
                State::Skip(0, Then::Block) => State::BlockSize,
                State::Skip(0, Then::Frame) => State::Magic,
                s => s,
            };
        }
    }

    fn between_frames(&self) -> bool {
        matches!(self.state, State::Untracked)
            || (matches!(self.state, State::Magic) && self.have == 0)
    }
}

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ended |= n == 0 && !buf.is_empty();
        if n == 0 && !buf.is_empty() && !self.between_frames() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "it ends inside an LZ4 frame",
            ));
        }
        self.follow(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two frames (with checksums and a content size) decode to both; every cut of them is an
    /// error unless it falls between frames.
    #[test]
    fn a_cut_inside_a_frame_is_an_error() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(
            lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .content_checksum(true)
                .block_checksums(true)
                .content_size(Some(data.len() as u64)),
            Vec::new(),
        );
        io::Write::write_all(&mut enc, &data).unwrap();
        let one = enc.finish().unwrap();
        let two = [one.clone(), one.clone()].concat();
        let decode = |bytes: &[u8]| {
            let mut out = Vec::new();
            decoder(bytes).read_to_end(&mut out).map(|_| out)
        };
        let whole = decode(&two).unwrap();
        assert!(
            whole == [data.clone(), data].concat(),
            "{} bytes decoded",
            whole.len()
        );
        for cut in (0..two.len())
            .step_by(97)
            .chain([1, 4, 5, 7, one.len() - 1, one.len() + 1])
        {
            let between = cut == 0 || cut == one.len();
            assert_eq!(
                decode(&two[..cut]).is_ok(),
                between,
                "cut at {cut} of {}",
                two.len()
            );
        }
        // a skippable frame between two frames is stepped over, as `lz4 -d` does
        let mut with_skip = one.clone();
        with_skip.extend_from_slice(&(SKIPPABLE + 3).to_le_bytes());
        with_skip.extend_from_slice(&5u32.to_le_bytes());
        with_skip.extend_from_slice(b"skip!");
        with_skip.extend_from_slice(&one);
        assert!(decode(&with_skip).unwrap() == whole);
        assert!(decode(&with_skip[..one.len() + 10]).is_err());
        let mut skip = Lz4Frames::new(io::empty());
        let mut frame = (SKIPPABLE + 3).to_le_bytes().to_vec();
        frame.extend_from_slice(&5u32.to_le_bytes());
        frame.extend_from_slice(b"skip!");
        skip.follow(&frame[..10]);
        assert!(!skip.between_frames());
        skip.follow(&frame[10..]);
        assert!(skip.between_frames());
    }
}
