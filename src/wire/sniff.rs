//! What the first bytes of an input are: MessagePack, a compressed stream, another file format,
//! or text. One detection for every entry point (the CLI, the Rust readers, Python), so that a
//! `.parquet`, a gzip stream named `.msgpack` or a `notes.txt` is never decoded as msgpack.
//!
//! Why text needs a rule: every ASCII byte is a positive fixint, so any text file is a valid msgpack
//! stream of small integers. A msgpack map, array, str or bin starts with a byte >= 0x80, so only a
//! `values` stream of small integers can look like text; [`sniff`] calls an input text only when it
//! also has the shape of text (see [`looks_like_text`]).

/// How many leading bytes [`sniff`] looks at (at most).
pub const SNIFF_LEN: usize = 4096;

/// Inputs shorter than this are never called text.
pub const MIN_TEXT: usize = 8;

/// A compression recognised by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip (`1f 8b`)
    Gzip,
    /// Zstandard frame (`28 b5 2f fd`)
    Zstd,
    /// LZ4 frame (`04 22 4d 18`)
    Lz4,
    /// zlib stream (RFC 1950: `78 01`, `78 5e`, `78 9c`, `78 da`)
    Zlib,
}

/// Another file format, recognised by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherFormat {
    /// Apache Parquet (`PAR1`)
    Parquet,
    /// Arrow IPC file / Feather v2 (`ARROW1`)
    ArrowFile,
    /// Feather v1 (`FEA1`)
    FeatherV1,
    /// a zip archive, e.g. NumPy's `.npz` (`PK\x03\x04`)
    Zip,
    /// NumPy `.npy` (`\x93NUMPY`)
    Npy,
    /// an Arrow IPC stream (`ff ff ff ff`, then a metadata length, a multiple of 8)
    ArrowStream,
    /// a Python pickle, protocol 2 to 5 (`80 02`..`80 05`, then an opcode)
    Pickle,
    /// safetensors (a little-endian u64 header length, then the JSON header)
    Safetensors,
    /// HDF5 (`\x89HDF\r\n\x1a\n`)
    Hdf5,
    /// TFRecord (a little-endian u64 record length, then its masked CRC-32C)
    TfRecord,
    /// SQLite (`SQLite format 3\0`)
    Sqlite,
    /// Avro object container (`Obj\x01` and `avro.` metadata)
    Avro,
    /// ORC (`ORC`, then binary)
    Orc,
    /// a tar archive (`ustar` at byte 257)
    Tar,
    /// an image: PNG, JPEG or GIF
    Image,
    /// xz-compressed data (`\xfd7zXZ\0`; not decompressed here)
    Xz,
    /// bzip2-compressed data (`BZh`; not decompressed here)
    Bzip2,
    /// a 7z archive (`7z\xbc\xaf\x27\x1c`)
    SevenZip,
}

impl OtherFormat {
    /// The format's usual name.
    pub fn name(self) -> &'static str {
        match self {
            OtherFormat::Parquet => "a Parquet file",
            OtherFormat::ArrowFile => "an Arrow IPC (Feather) file",
            OtherFormat::FeatherV1 => "a Feather v1 file",
            OtherFormat::Zip => "a zip archive (NumPy .npz?)",
            OtherFormat::Npy => "a NumPy .npy file",
            OtherFormat::ArrowStream => "an Arrow IPC stream",
            OtherFormat::Pickle => "a Python pickle",
            OtherFormat::Safetensors => "a safetensors file",
            OtherFormat::Hdf5 => "an HDF5 file",
            OtherFormat::TfRecord => "a TFRecord file",
            OtherFormat::Sqlite => "an SQLite database",
            OtherFormat::Avro => "an Avro file",
            OtherFormat::Orc => "an ORC file",
            OtherFormat::Tar => "a tar archive",
            OtherFormat::Image => "an image (PNG, JPEG or GIF)",
            OtherFormat::Xz => "xz-compressed data (decompress it first)",
            OtherFormat::Bzip2 => "bzip2-compressed data (decompress it first)",
            OtherFormat::SevenZip => "a 7z archive",
        }
    }
}

/// What the start of an input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    /// MessagePack (or too short to tell otherwise)
    Msgpack,
    /// compressed: decompress, then sniff again
    Compressed(Compression),
    /// another format: read it as that format, or refuse naming it
    Other(OtherFormat),
    /// text: a hint of its kind (`"JSON"`, `"CSV"`, or `""`)
    Text(&'static str),
}

/// Classify an input by its first bytes (pass at least [`SNIFF_LEN`] bytes when there are that
/// many; fewer are fine for short inputs).
pub fn sniff(head: &[u8]) -> Sniffed {
    let starts = |m: &[u8]| head.starts_with(m);
    if starts(&[0x1f, 0x8b]) {
        return Sniffed::Compressed(Compression::Gzip);
    }
    if starts(&[0x28, 0xb5, 0x2f, 0xfd]) {
        return Sniffed::Compressed(Compression::Zstd);
    }
    if starts(&[0x04, 0x22, 0x4d, 0x18]) {
        return Sniffed::Compressed(Compression::Lz4);
    }
    if is_zlib(head) {
        return Sniffed::Compressed(Compression::Zlib);
    }
    if starts(b"PAR1") {
        return Sniffed::Other(OtherFormat::Parquet);
    }
    if starts(b"ARROW1") {
        return Sniffed::Other(OtherFormat::ArrowFile);
    }
    if starts(b"FEA1") {
        return Sniffed::Other(OtherFormat::FeatherV1);
    }
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
        return Sniffed::Other(OtherFormat::Zip);
    }
    if starts(b"\x93NUMPY") {
        return Sniffed::Other(OtherFormat::Npy);
    }
    if let Some(f) = binary_format(head) {
        return Sniffed::Other(f);
    }
    if let Some(kind) = looks_like_text(head) {
        return Sniffed::Text(kind);
    }
    // printable magic: after text, so that a text file starting with these letters says text
    if starts(b"ORC") && head.get(3).is_some_and(|b| !b.is_ascii_graphic()) {
        return Sniffed::Other(OtherFormat::Orc);
    }
    Sniffed::Msgpack
}

/// Formats people keep beside msgpack dumps (ML checkpoints, datasets, archives) that a msgpack
/// read would otherwise take for numbers or maps: each by a magic or a structure that no
/// msgpack file starting with a map, array, str or bin has, and that a `values` stream of small
/// ints matches only by a long coincidence.
fn binary_format(head: &[u8]) -> Option<OtherFormat> {
    let starts = |m: &[u8]| head.starts_with(m);
    let le32 = |at: usize| -> Option<u64> {
        Some(u32::from_le_bytes(head.get(at..at + 4)?.try_into().ok()?) as u64)
    };
    let le64 = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(head.get(at..at + 8)?.try_into().ok()?))
    };
    if starts(b"\x89HDF\r\n\x1a\n") {
        return Some(OtherFormat::Hdf5);
    }
    if starts(b"SQLite format 3\0") {
        return Some(OtherFormat::Sqlite);
    }
    if starts(b"\x89PNG\r\n\x1a\n")
        || starts(b"\xff\xd8\xff")
        || starts(b"GIF87a")
        || starts(b"GIF89a")
    {
        return Some(OtherFormat::Image);
    }
    if starts(b"\xfd7zXZ\0") {
        return Some(OtherFormat::Xz);
    }
    if is_bzip2(head) {
        return Some(OtherFormat::Bzip2);
    }
    if starts(b"7z\xbc\xaf\x27\x1c") {
        return Some(OtherFormat::SevenZip);
    }
    if head.get(257..262) == Some(b"ustar") {
        return Some(OtherFormat::Tar);
    }
    if starts(b"Obj\x01") && head.windows(5).any(|w| w == b"avro.") {
        return Some(OtherFormat::Avro);
    }
    // protocol 4 and 5 open with a FRAME; 2 and 3 with an opcode that builds the first object
    if let [0x80, proto @ 2..=5, op, ..] = head {
        let opens = if *proto >= 4 {
            *op == 0x95
        } else {
            b"}](cKMJXqNG\x88\x89\x8a".contains(op)
        };
        if opens {
            return Some(OtherFormat::Pickle);
        }
    }
    // the continuation marker, a metadata length (a multiple of 8, padded by every writer), and
    // the flatbuffer's root offset inside that metadata
    if let (true, Some(len), Some(root)) = (starts(&[0xff; 4]), le32(4), le32(8)) {
        if len > 0 && len % 8 == 0 && len < 1 << 24 && (4..len).contains(&root) {
            return Some(OtherFormat::ArrowStream);
        }
    }
    // a record length and its masked CRC-32C: a 32-bit check no msgpack matches but by chance
    if let (Some(len), Some(crc)) = (head.get(..8), le32(8)) {
        let c = crc32c::crc32c(len);
        if c.rotate_right(15).wrapping_add(0xa282_ead8) as u64 == crc {
            return Some(OtherFormat::TfRecord);
        }
    }
    // a header length, then the header: a JSON object of string keys
    if head.get(8..10) == Some(b"{\"") && le64(0).is_some_and(|n| (2..1 << 27).contains(&n)) {
        return Some(OtherFormat::Safetensors);
    }
    None
}

/// bzip2: `BZh`, a block size digit, and the block magic (the digits of pi).
fn is_bzip2(head: &[u8]) -> bool {
    matches!(head, [b'B', b'Z', b'h', b'1'..=b'9', rest @ ..] if rest.starts_with(b"1AY&SY"))
}

/// A zlib header (`78 01/5e/9c/da`, the four levels zlib writes) followed by a deflate block
/// header that is not reserved. `0x78` is also the msgpack int 120, so a stream of small ints
/// could start the same way: the block check halves what remains of that chance, and a false
/// match fails to inflate at once (an error, never wrong rows).
fn is_zlib(head: &[u8]) -> bool {
    match head {
        [0x78, 0x01 | 0x5e | 0x9c | 0xda, block, ..] => {
            // BTYPE (bits 1-2 of the first deflate byte) 0b11 is reserved
            (block >> 1) & 0b11 != 0b11
        }
        _ => false,
    }
}

/// `Some(hint)` when `head` reads as text: valid UTF-8 (a character cut at the end of the window
/// is fine), no control characters but tab, line feed, carriage return and form feed, and the shape
/// of text: at least [`MIN_TEXT`] bytes, a word (two ASCII letters in a row), and a line break or
/// a start like JSON (`{`, `[`, `"`); or JSON without a word: `{` or `[` then a comma, colon or
/// quote (at least [`MIN_TEXT`] bytes), or a whole input that is one `{...}` or `[...]`. The hint
/// is `"JSON"` for a JSON-like start, `"CSV"` when the first line has a comma, tab or semicolon,
/// else `""`.
///
/// Never true for msgpack that starts with a map, array, str, bin, nil, bool, float or a negative
/// int (their first byte is not printable ASCII): only a `values` stream of small positive ints can
/// match, and such a stream is read with an explicit `values` layout.
pub fn looks_like_text(head: &[u8]) -> Option<&'static str> {
    // a byte order mark (Windows editors and PowerShell write them): the text after it
    if let Some(rest) = head.strip_prefix(b"\xef\xbb\xbf") {
        return looks_like_text(rest);
    }
    if let Some(text) = utf16_text(head) {
        return looks_like_text(text.as_bytes());
    }
    let window = &head[..head.len().min(SNIFF_LEN)];
    let first = *window.first()?;
    if !(first.is_ascii_graphic() || first.is_ascii_whitespace()) {
        return None;
    }
    let text = match std::str::from_utf8(window) {
        Ok(t) => t,
        // a multi-byte character cut by the window's end (at most 3 bytes short)
        Err(e) if e.error_len().is_none() && window.len() - e.valid_up_to() < 4 => {
            std::str::from_utf8(&window[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c'))
    {
        return None;
    }
    // the shape of text: a few bytes, a word (two letters in a row), and a line break or a
    // JSON-like start; a list of small ints rarely has all three
    let has_word = text
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_alphabetic());
    let trimmed = text.trim_start();
    let json = trimmed.starts_with(['{', '[', '"']);
    let worded = text.len() >= MIN_TEXT && has_word && (json || text.contains('\n'));
    // JSON without a word of two letters: `[1, 2, 3]`, `{"a": 1}`. An object or array start
    // with JSON's punctuation after it, or a whole input that is one bracketed value, is far more
    // often such a file than small ints that happen to spell it (which read with `values`).
    let bracketed = trimmed.starts_with(['{', '[']);
    let punctuated = text.len() >= MIN_TEXT && bracketed && trimmed.contains([',', ':', '"']);
    let whole = head.len() < SNIFF_LEN && bracketed && {
        let t = trimmed.trim_end();
        t.len() >= 2
            && ((t.starts_with('{') && t.ends_with('}'))
                || (t.starts_with('[') && t.ends_with(']')))
    };
    if !(worded || punctuated || whole) {
        return None;
    }
    if json {
        return Some("JSON");
    }
    let first_line = trimmed.lines().next().unwrap_or("");
    Some(if first_line.contains([',', '\t', ';']) {
        "CSV"
    } else {
        ""
    })
}

/// The text of `head` when it starts with a UTF-16 byte order mark and decodes as UTF-16 (up to
/// a unit cut by the window's end).
fn utf16_text(head: &[u8]) -> Option<String> {
    let le = match head {
        [0xff, 0xfe, ..] => true,
        [0xfe, 0xff, ..] => false,
        _ => return None,
    };
    let window = &head[2..head.len().min(SNIFF_LEN)];
    let units = window.chunks_exact(2).map(|p| {
        let p = [p[0], p[1]];
        if le {
            u16::from_le_bytes(p)
        } else {
            u16::from_be_bytes(p)
        }
    });
    let mut text = String::new();
    let mut decoded = char::decode_utf16(units).peekable();
    while let Some(c) = decoded.next() {
        match c {
            Ok(c) => text.push(c),
            // a surrogate pair cut by the window's end
            Err(_) if decoded.peek().is_none() => break,
            Err(_) => return None,
        }
    }
    Some(text)
}

impl Compression {
    /// The codec's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Zlib => "zlib",
        }
    }
}

/// The one-line message for an input that is not MessagePack (the caller names the input), or
/// `None` when it is MessagePack.
pub fn not_msgpack_message(s: Sniffed) -> Option<String> {
    match s {
        Sniffed::Msgpack => None,
        Sniffed::Compressed(c) => Some(format!(
            "input is {}-compressed data, not MessagePack: decompress it first (files and Python sources are decompressed by themselves)",
            c.name()
        )),
        Sniffed::Other(f) => Some(format!("input is {}, not MessagePack", f.name())),
        Sniffed::Text(kind) => {
            let hint = if kind.is_empty() {
                String::new()
            } else {
                format!(" ({kind}?)")
            };
            Some(format!(
                "input looks like text{hint}, not MessagePack; to read it as a stream of small integers anyway, use the values layout"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_and_other_formats_by_magic() {
        assert_eq!(
            sniff(&[0x1f, 0x8b, 8, 0]),
            Sniffed::Compressed(Compression::Gzip)
        );
        assert_eq!(
            sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Sniffed::Compressed(Compression::Zstd)
        );
        assert_eq!(
            sniff(&[0x04, 0x22, 0x4d, 0x18]),
            Sniffed::Compressed(Compression::Lz4)
        );
        assert_eq!(
            sniff(&[0x78, 0x9c, 0x4b, 0x4c]),
            Sniffed::Compressed(Compression::Zlib)
        );
        assert_eq!(sniff(b"PAR1\x15\x04"), Sniffed::Other(OtherFormat::Parquet));
        assert_eq!(sniff(b"ARROW1\0\0"), Sniffed::Other(OtherFormat::ArrowFile));
        assert_eq!(sniff(b"PK\x03\x04\x14\0"), Sniffed::Other(OtherFormat::Zip));
        assert_eq!(
            sniff(b"\x93NUMPY\x01\x00"),
            Sniffed::Other(OtherFormat::Npy)
        );
    }

    #[test]
    fn msgpack_starts_are_never_text() {
        // a map, an array, a str, nil, a float, a negative int, a bare ndarray map
        for head in [
            &b"\x81\xa2id\x01"[..],
            b"\x92\x01\x02",
            b"\xa5hello\n",
            b"\xc0",
            b"\xcb\x3f\xf0\0\0\0\0\0\0",
            b"\xff\n",
            b"",
        ] {
            assert_eq!(sniff(head), Sniffed::Msgpack, "{head:?}");
        }
        // small ints without the shape of text (no line break, no JSON start)
        assert_eq!(sniff(&[1, 2, 3]), Sniffed::Msgpack);
        assert_eq!(sniff(b"AB"), Sniffed::Msgpack);
        assert_eq!(sniff(b"*\n"), Sniffed::Msgpack); // [42, 10]
        assert_eq!(sniff(b"\"#$%&'()*+"), Sniffed::Msgpack); // ints 34..43
        assert_eq!(sniff(b"[123"), Sniffed::Msgpack); // not closed, no punctuation
        assert_eq!(sniff(b"{|}~"), Sniffed::Msgpack); // ints 123..126: no JSON punctuation
    }

    #[test]
    fn other_binary_formats_by_magic_or_shape() {
        let pickle = [0x80, 0x04, 0x95, 0x21, 0, 0, 0, 0, 0, 0, 0, 0x7d, 0x94];
        let pickle2 = [0x80, 0x02, 0x7d, 0x71, 0x00];
        let mut arrow = vec![0xff, 0xff, 0xff, 0xff, 0x78, 0, 0, 0, 0x10, 0, 0, 0];
        arrow.extend([0; 120]);
        let mut st = 20u64.to_le_bytes().to_vec();
        st.extend(b"{\"w\": {\"dtype\": 1}}");
        let mut tar = vec![0; 257];
        tar.extend(b"ustar\x0000");
        let mut avro = b"Obj\x01\x04\x16avro.schema".to_vec();
        avro.push(0);
        for (head, f) in [
            (&pickle[..], OtherFormat::Pickle),
            (&pickle2[..], OtherFormat::Pickle),
            (&arrow[..], OtherFormat::ArrowStream),
            (&st[..], OtherFormat::Safetensors),
            (&tar[..], OtherFormat::Tar),
            (&avro[..], OtherFormat::Avro),
            (b"\x89HDF\r\n\x1a\n\0\0", OtherFormat::Hdf5),
            // a first record of 5 bytes: its length, then the length's masked CRC-32C (computed
            // by a bitwise CRC-32C in Python, polynomial 0x82F63B78, not by this crate)
            (b"\x05\0\0\0\0\0\0\0\xea\xb2\x04\x3e", OtherFormat::TfRecord),
            (b"SQLite format 3\0\x10", OtherFormat::Sqlite),
            (b"\x89PNG\r\n\x1a\n\0", OtherFormat::Image),
            (b"\xff\xd8\xff\xe0\0\x10JFIF", OtherFormat::Image),
            (b"\xfd7zXZ\0\0", OtherFormat::Xz),
            (b"BZh91AY&SY\x01", OtherFormat::Bzip2),
            (b"7z\xbc\xaf\x27\x1c\0", OtherFormat::SevenZip),
            (b"ORC\x0a\x05", OtherFormat::Orc),
        ] {
            assert_eq!(sniff(head), Sniffed::Other(f), "{head:?}");
        }
        // msgpack that shares a first byte with them
        for head in [
            &b"\x80\x80"[..],                  // two empty maps
            b"\x80\x02\x01",                   // {} then small ints
            b"\xff\xff\xff\xff\0\0\0\0\x01",   // -1 four times, then zeros
            b"\xff\xff\xff\xff\x03\0\0\0\x01", // a length that no writer pads so
            b"\x89\xa1a\x01",                  // a map of 9
            b"ORC is a word\n",                // text, said as text
        ] {
            assert!(!matches!(sniff(head), Sniffed::Other(_)), "{head:?}");
        }
        assert_eq!(sniff(b"ORC is a word\n"), Sniffed::Text(""));
    }

    #[test]
    fn text_after_a_byte_order_mark() {
        assert_eq!(
            sniff(b"\xef\xbb\xbf{\"name\": \"x\"}"),
            Sniffed::Text("JSON")
        );
        // `text` in UTF-16 after its byte order mark, little- or big-endian
        let utf16 = |text: &str, le: bool| -> Vec<u8> {
            let mut out = if le {
                vec![0xff, 0xfe]
            } else {
                vec![0xfe, 0xff]
            };
            for u in text.encode_utf16() {
                out.extend(if le { u.to_le_bytes() } else { u.to_be_bytes() });
            }
            out
        };
        assert_eq!(
            sniff(&utf16("{\"a\": [1, 2, 3]}", true)),
            Sniffed::Text("JSON")
        );
        assert_eq!(
            sniff(&utf16("id,name\n1,ab\n", false)),
            Sniffed::Text("CSV")
        );
        // -1, -2 and then ints that are no UTF-16 text
        assert_eq!(sniff(&[0xff, 0xfe, 0x01, 0x02]), Sniffed::Msgpack);
    }

    #[test]
    fn json_without_words_is_text() {
        // no two letters in a row, yet JSON: punctuation after a bracket, or one bracketed value
        for head in [
            &b"[1, 2, 3]\n"[..],
            b"{\"a\": 1}\n",
            b"{\"a\":1}",
            b"[0.5,1.5,2.5,3.5]",
            b"{}",
            b" [ ] \n",
        ] {
            assert_eq!(sniff(head), Sniffed::Text("JSON"), "{head:?}");
        }
        // a long one-line array of numbers, cut by the window
        let mut long = b"[".to_vec();
        while long.len() < SNIFF_LEN + 10 {
            long.extend(b"12, ");
        }
        assert_eq!(sniff(&long[..SNIFF_LEN]), Sniffed::Text("JSON"));
    }

    #[test]
    fn text_kinds() {
        assert_eq!(sniff(b"{\"id\": 1}\n"), Sniffed::Text("JSON"));
        assert_eq!(sniff(b"  [\"ab\", 2]"), Sniffed::Text("JSON"));
        assert_eq!(sniff(b"id,label\n1,a\n"), Sniffed::Text("CSV"));
        assert_eq!(sniff(b"# Notes\n\nsome words\n"), Sniffed::Text(""));
        assert_eq!(
            sniff("h\u{e9}llo w\u{f6}rld\n".as_bytes()),
            Sniffed::Text("")
        );
        // a multi-byte character cut by the window still counts as text
        let mut long = "ab\n".repeat(SNIFF_LEN / 3).into_bytes();
        long.truncate(SNIFF_LEN - 3);
        long.extend("\u{e9}\u{e9}".as_bytes());
        assert_eq!(sniff(&long), Sniffed::Text(""));
        // a control byte makes it binary
        assert_eq!(sniff(b"ab\x01cd\n"), Sniffed::Msgpack);
    }

    #[test]
    fn messages() {
        let m = not_msgpack_message(Sniffed::Text("JSON")).unwrap();
        assert!(
            m.starts_with("input looks like text (JSON?), not MessagePack"),
            "{m}"
        );
        let m = not_msgpack_message(Sniffed::Other(OtherFormat::Parquet)).unwrap();
        assert_eq!(m, "input is a Parquet file, not MessagePack");
        let m = not_msgpack_message(Sniffed::Compressed(Compression::Zlib)).unwrap();
        assert!(m.starts_with("input is zlib-compressed data"), "{m}");
        assert!(not_msgpack_message(Sniffed::Msgpack).is_none());
    }
}
