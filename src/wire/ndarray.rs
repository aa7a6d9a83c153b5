//! Recognising msgpack-numpy maps: ndarrays (`nd: True`), numpy scalars (`nd: False`), Python
//! complex numbers, and openpi's `__ndarray__` and `__npgeneric__` maps. A map is special only when
//! it has the full key set; anything else is an ordinary user map.

use std::borrow::Cow;

use crate::error::{Error, ErrorKind, Result};
use crate::options::Dialect;
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::dtype::{ByteOrder, NumpyDtype, StructField};
use crate::wire::flax;
use crate::wire::header_memo;
use crate::wire::pyrepr::parse_complex;
use crate::wire::spelling::Spelling;

/// Most ndarray maps have 5 keys; an upper bound keeps the probe cheap on big user maps.
pub(crate) const MAX_SPECIAL_KEYS: usize = 16;
/// numpy allows at most 64 dimensions.
pub(crate) const MAX_NDIM: usize = 64;

/// What a special map holds.
#[derive(Debug)]
pub(crate) enum Special<'a> {
    /// An ndarray (`nd: True`, or openpi) or a numpy scalar (`nd: False`: `shape` is empty).
    Array(NdArray<'a>),
    /// A Python complex, parsed.
    Complex(f64, f64),
}

/// The parts of an ndarray map, borrowed from the input.
#[derive(Debug)]
pub(crate) struct NdArray<'a> {
    /// Raw msgpack bytes of the `type` value: a cheap key for caching the parsed dtype.
    pub type_raw: &'a [u8],
    /// Position of the `type` value in the buffer (for error offsets).
    pub type_pos: usize,
    /// `kind` as bytes (`b""`, `b"V"`, `b"O"`), if present.
    pub kind: Option<&'a [u8]>,
    /// `nd` was False: a numpy scalar.
    pub scalar: bool,
    /// Shape (empty for 0-d arrays and scalars).
    pub shape: Vec<usize>,
    /// Number of elements (product of the shape; checked for overflow).
    pub len: usize,
    /// The `data` payload: borrowed from the input, or (openpi's `__npgeneric__` scalars, whose
    /// `data` is a plain msgpack number, bool or string) its value converted to the dtype's bytes.
    pub data: Cow<'a, [u8]>,
    /// Position of the payload (or of the converted value) in the buffer.
    pub data_pos: usize,
    /// read `type` with msgpack-numpy-js's type codes
    pub js: bool,
    /// an openpi map (`__ndarray__` / `__npgeneric__`)
    pub openpi: bool,
    /// `type_raw` is the dtype's text itself, not msgpack: `np.save` bytes in an ext value
    /// (`wire::npy`) or Flax's ext values (`wire::flax`), whose header is no msgpack-numpy map
    pub type_text: bool,
    /// how a msgpack-numpy map was spelled (its keys, `kind`, payload); the default elsewhere
    pub spelling: Spelling,
}

impl NdArray<'_> {
    /// Whether the map's spelling says how the file was written: a msgpack-numpy map's (not
    /// openpi's, msgpack-numpy-js's or an ext value's, which have forms of their own).
    pub(crate) fn spelled(&self) -> bool {
        !(self.openpi || self.js || self.type_text)
    }
}

pub(crate) fn key_id(k: &[u8], dialect: Dialect) -> u8 {
    match (k, dialect) {
        (b"nd", Dialect::Auto | Dialect::MsgpackNumpy | Dialect::Js) => 1,
        (b"type", Dialect::Auto | Dialect::MsgpackNumpy | Dialect::Js) => 2,
        (b"kind", Dialect::Auto | Dialect::MsgpackNumpy) => 3,
        (b"shape", _) => 4,
        (b"data", _) => 5,
        (b"complex", Dialect::Auto | Dialect::MsgpackNumpy) => 6,
        (b"__ndarray__", Dialect::Auto | Dialect::Openpi) => 7,
        (b"dtype", Dialect::Auto | Dialect::Openpi) => 8,
        (b"__npgeneric__", Dialect::Auto | Dialect::Openpi) => 9,
        _ => 0,
    }
}

/// Whether `dialect` reads Flax's ext values (`wire::flax`).
fn reads_flax(dialect: Dialect) -> bool {
    matches!(dialect, Dialect::Auto | Dialect::Flax)
}

/// Whether the ext value at the cursor reads as an ndarray, numpy scalar or complex (`npy_ext`'s
/// code, or one of Flax's); the cursor does not move.
pub(crate) fn is_special_ext(c: &Cursor<'_>, dialect: Dialect, npy_ext: Option<i8>) -> bool {
    // (asked of every value of some columns: anything else returns here, before `read_ext`
    // would build an error to say it is not an ext)
    if !matches!(c.peek_kind(), Ok(Kind::Ext)) {
        return false;
    }
    let mut d = c.clone();
    match d.read_ext() {
        Ok((t, _)) if npy_ext == Some(t) => true,
        Ok((t, _)) if reads_flax(dialect) && flax::is_flax_code(t) => {
            matches!(
                probe(&mut c.clone(), dialect, npy_ext, 0),
                Ok(Some(_)) | Err(_)
            )
        }
        _ => false,
    }
}

/// If the map at the cursor is a msgpack-numpy special map (or an ext value that is an ndarray:
/// `npy_ext`'s `np.save` bytes, Flax's), consume it and return what it holds; otherwise leave the
/// cursor where it was and return `None`.
pub(crate) fn probe<'a>(
    c: &mut Cursor<'a>,
    dialect: Dialect,
    npy_ext: Option<i8>,
    depth: usize,
) -> Result<Option<Special<'a>>> {
    let start = c.pos();
    if c.peek_kind()? == Kind::Ext {
        let (t, payload) = c.read_ext()?;
        let pos = c.pos() - payload.len();
        let found = if npy_ext == Some(t) {
            Some(Special::Array(crate::wire::npy::parse(
                payload,
                pos,
                c.offset_of(0),
            )?))
        } else if reads_flax(dialect) && flax::is_flax_code(t) {
            flax::parse(c, t, payload, pos, dialect == Dialect::Flax)?
        } else {
            None
        };
        if found.is_none() {
            c.set_pos(start);
        }
        return Ok(found);
    }
    if c.peek_kind()? != Kind::Map {
        return Ok(None);
    }
    if let Some(nd) = header_memo::recall(c, dialect, depth) {
        return Ok(Some(Special::Array(nd)));
    }
    let n = c.read_map_len()?;
    if n == 0 || n > MAX_SPECIAL_KEYS {
        c.set_pos(start);
        return Ok(None);
    }
    // positions of the values of the keys we care about, by key id
    let mut at = [usize::MAX; 10];
    let mut others = 0;
    // msgpack_numpy's keys are bin (`b"nd"`); str keys come from packers of old
    // (`use_bin_type=False`) or from a user's own map, e.g. a table with columns `nd`, `type` and
    // `data`, which msgpack_numpy (`raw=False`) reads as a dict
    let mut str_keys = false;
    for _ in 0..n {
        let id = match c.peek_kind()? {
            k @ (Kind::Str | Kind::Bin) => {
                let id = key_id(c.read_str_or_bin()?.0, dialect);
                str_keys |= id != 0 && k == Kind::Str;
                id
            }
            _ => {
                // Not a msgpack-numpy map (its keys are all strings); let the map decoder report it.
                c.set_pos(start);
                return Ok(None);
            }
        };
        if id != 0 {
            // A key given twice: not an ndarray, except in msgpack-numpy-js's maps, whose
            // `packBinary` of a 2-D array writes `shape` twice (the flat length, then the dims;
            // its reader, like Python's, takes the last).
            if at[id as usize] != usize::MAX && dialect != Dialect::Js {
                c.set_pos(start);
                return Ok(None);
            }
            // A nil value counts as a missing key, as it does for columns (both are null): a
            // record `{nd: True, type, shape: nil, data: nil}` is a map with nulls, which is also
            // how the writer writes a row whose missing keys were read as nulls.
            if c.peek_kind()? != Kind::Nil {
                at[id as usize] = c.pos();
            }
        } else {
            // every special map has two of its keys at least: a user map's values are not
            // stepped over to find that out (`{"x": [100,000 maps]}` was walked whole here)
            others += 1;
            if n - others < 2 {
                c.set_pos(start);
                return Ok(None);
            }
        }
        c.skip(depth)?;
    }
    let end = c.pos();
    let has = |id: usize| at[id] != usize::MAX;
    let read_bool = |c: &mut Cursor<'a>, id: usize| -> Option<bool> {
        c.set_pos(at[id]);
        c.read_bool().ok()
    };
    // whether `special` is an ndarray() (its payload read as the `data` bin)
    let mut parsed = false;
    let special = if has(1) && has(2) && has(5) {
        let scalar = match read_bool(c, 1) {
            Some(true) if has(4) => Some(false),
            Some(true) => None,
            Some(false) => Some(true),
            // msgpack_numpy tests `nd is True`: beside bin keys any other value is a scalar's
            None if !str_keys => Some(true),
            None => None,
        };
        match scalar.map(|scalar| ndarray(c, &at, scalar, dialect, str_keys)) {
            Some(Ok(Special::Array(nd))) if str_keys && !nd.js && !names_a_dtype(&nd) => None,
            Some(Ok(nd)) => {
                parsed = true;
                Some(nd)
            }
            // str keys whose values are no ndarray's (a `type` that is a map, a `shape` that is
            // no list of ints): a user's map, as msgpack_numpy reads it
            Some(Err(_)) if str_keys && dialect != Dialect::Js => None,
            Some(Err(e)) => return Err(e),
            None => None,
        }
    } else if has(6) && has(5) && !has(1) {
        // msgpack_numpy takes any map with a `b"complex"` key for a complex (it writes `True`);
        // str keys are an old packer's only when the value is `True`
        if read_bool(c, 6) == Some(true) || !str_keys {
            c.set_pos(at[5]);
            let (s, _) = c.read_str_or_bin()?;
            let (re, im) = parse_complex(s).ok_or_else(|| {
                c.error_at(
                    at[5],
                    ErrorKind::InvalidNdarray(format!(
                        "complex data {:?} is not a Python complex literal",
                        String::from_utf8_lossy(s)
                    )),
                )
            })?;
            Some(Special::Complex(re, im))
        } else {
            None
        }
    } else if has(7) && has(8) && has(4) && has(5) {
        match read_bool(c, 7) {
            Some(true) => {
                at[2] = at[8];
                parsed = true;
                Some(ndarray(c, &at, false, dialect, true)?)
            }
            _ => None,
        }
    } else if has(9) && has(8) && has(5) && !has(7) {
        // openpi's numpy scalar: {__npgeneric__: True, dtype, data: obj.item()}
        match read_bool(c, 9) {
            Some(true) => Some(npgeneric(c, &at)?),
            _ => None,
        }
    } else {
        None
    };
    // an ndarray map whose payload is its last entry (as msgpack-numpy writes them) is kept
    // for the next one with the same header bytes
    if let (Some(Special::Array(nd)), true) = (&special, c.pos() == end) {
        if parsed {
            header_memo::remember(c.buf(), start, at[4], at[5], nd, dialect, depth);
        }
    }
    c.set_pos(if special.is_some() { end } else { start });
    Ok(special)
}

/// Whether a str-keyed map's `type` is a numpy dtype string (or a descr list): `{"nd": False,
/// "type": "click", "data": "..."}` is a user's record.
fn names_a_dtype(nd: &NdArray<'_>) -> bool {
    let mut c = Cursor::new(nd.type_raw, 0);
    match c.read_str_or_bin() {
        Ok((s, _)) => std::str::from_utf8(s).is_ok_and(|s| NumpyDtype::parse(s).is_ok()),
        Err(_) => true,
    }
}

fn ndarray<'a>(
    c: &mut Cursor<'a>,
    at: &[usize; 10],
    scalar: bool,
    dialect: Dialect,
    str_keys: bool,
) -> Result<Special<'a>> {
    let bad =
        |c: &Cursor<'a>, pos: usize, msg: String| c.error_at(pos, ErrorKind::InvalidNdarray(msg));
    // type: a str (or bin) dtype string, or a descr array for structured dtypes
    c.set_pos(at[2]);
    let type_pos = at[2];
    match c.peek_kind()? {
        Kind::Str | Kind::Bin | Kind::Array => {}
        k => {
            return Err(bad(
                c,
                type_pos,
                format!("'type' must be a dtype string or descr list, found {k:?}").to_lowercase(),
            ))
        }
    }
    c.skip(MAX_NDIM)?;
    let type_raw = &c.buf()[type_pos..c.pos()];
    let kind = if at[3] != usize::MAX {
        c.set_pos(at[3]);
        match c.peek_kind()? {
            // msgpack_numpy compares `kind` with `b"V"` / `b"O"`: a str beside bin keys is none
            // (the dtype then comes from `type` alone, a descr list or a dtype string)
            Kind::Str if !str_keys => None,
            Kind::Str | Kind::Bin => Some(c.read_str_or_bin()?.0),
            Kind::Nil => None,
            k => {
                return Err(bad(
                    c,
                    at[3],
                    format!("'kind' must be bytes, found {k:?}").to_lowercase(),
                ))
            }
        }
    } else {
        None
    };
    let mut shape = Vec::new();
    if !scalar {
        c.set_pos(at[4]);
        let n = match c.peek_kind()? {
            Kind::Array => c.read_array_len()?,
            // numpy takes an int for a 1-d shape (`np.ndarray(shape=3)`), so msgpack_numpy
            // reads a writer's `shape: 3` as (3,): one entry, read below
            Kind::Int => 1,
            k => {
                return Err(bad(
                    c,
                    at[4],
                    format!("'shape' must be an array of ints, found {k:?}").to_lowercase(),
                ))
            }
        };
        if n > MAX_NDIM {
            return Err(bad(
                c,
                at[4],
                format!("{n} dimensions (numpy allows {MAX_NDIM})"),
            ));
        }
        for _ in 0..n {
            let p = c.pos();
            match c.read_int() {
                Ok(Int::I(d)) if d >= 0 => shape.push(
                    usize::try_from(d)
                        .map_err(|_| bad(c, p, format!("shape entry {d} is too large")))?,
                ),
                Ok(Int::I(d)) => return Err(bad(c, p, format!("negative shape entry {d}"))),
                Ok(Int::U(d)) => return Err(bad(c, p, format!("shape entry {d} is too large"))),
                Err(_) => return Err(bad(c, p, "'shape' must be an array of ints".into())),
            }
        }
    }
    let len = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(c, at[4], format!("shape {shape:?} overflows")))?;
    c.set_pos(at[5]);
    let raw = c.peek_kind()? == Kind::Str;
    let (data, data_pos) = match c.peek_kind()? {
        Kind::Str | Kind::Bin => c.read_str_or_bin()?,
        // a numpy masked array's `.data` is an ndarray, which msgpack_numpy packs as a map of its
        // own: Python reads its buffer (the mask is dropped), and so do we
        Kind::Map => match nested_data(c)? {
            Some(d) => {
                // (not at the map's end: no header memo is made from this one)
                c.set_pos(at[5]);
                d
            }
            None => return Err(bad(c, at[5], "'data' must be bin, found map".into())),
        },
        k => {
            return Err(bad(
                c,
                at[5],
                format!("'data' must be bin, found {k:?}").to_lowercase(),
            ))
        }
    };
    Ok(Special::Array(NdArray {
        type_raw,
        type_pos,
        kind,
        scalar,
        shape,
        len,
        data: Cow::Borrowed(data),
        data_pos,
        js: dialect == Dialect::Js,
        openpi: at[7] != usize::MAX,
        type_text: false,
        spelling: Spelling {
            str_keys,
            no_kind: at[3] == usize::MAX,
            raw,
        },
    }))
}

/// The payload of the ndarray map at the cursor (`nd` and a bin `data` among its keys), with its
/// position; `None` for any other map. One level only: its `data` must be bin.
fn nested_data<'a>(c: &mut Cursor<'a>) -> Result<Option<(&'a [u8], usize)>> {
    let n = c.read_map_len()?;
    let (mut nd, mut data) = (false, None);
    for _ in 0..n.min(MAX_SPECIAL_KEYS + 1) {
        let key = match c.peek_kind()? {
            Kind::Str | Kind::Bin => c.read_str_or_bin()?.0,
            _ => return Ok(None),
        };
        match (key, c.peek_kind()?) {
            (b"nd", Kind::Bool) => nd = c.read_bool()?,
            (b"data", Kind::Bin | Kind::Str) => data = Some(c.read_str_or_bin()?),
            _ => c.skip(MAX_NDIM)?,
        }
    }
    Ok(if n <= MAX_SPECIAL_KEYS && nd {
        data
    } else {
        None
    })
}

/// openpi's numpy scalar, `np.dtype(dtype).type(data)` in Python: `data` (a msgpack bool, int,
/// float, str or bin, from `obj.item()`) is converted to the bytes of `dtype`, so the scalar reads
/// like msgpack-numpy's `{nd: False}` one. A value `dtype` cannot hold exactly is an error.
/// How much wider than its value an openpi `str_`/`bytes_` scalar's dtype may say it is.
const PAD_SLACK: usize = 64;

fn npgeneric<'a>(c: &mut Cursor<'a>, at: &[usize; 10]) -> Result<Special<'a>> {
    let bad = |c: &Cursor<'a>, pos: usize, msg: String| {
        c.error_at(
            pos,
            ErrorKind::InvalidNdarray(format!("openpi scalar: {msg}")),
        )
    };
    let type_pos = at[8];
    c.set_pos(type_pos);
    let s = match c.peek_kind()? {
        Kind::Str | Kind::Bin => c.read_str_or_bin()?.0,
        k => {
            return Err(bad(
                c,
                type_pos,
                format!("'dtype' must be a dtype string, found {k:?}").to_lowercase(),
            ))
        }
    };
    let type_raw = &c.buf()[type_pos..c.pos()];
    let dt = std::str::from_utf8(s)
        .map_err(|_| {
            c.error_at(
                type_pos,
                ErrorKind::UnsupportedDtype(String::from_utf8_lossy(s).into()),
            )
        })
        .and_then(|s| NumpyDtype::parse(s).map_err(|e| e.at_offset(c.offset_of(type_pos))))?;
    let data_pos = at[5];
    c.set_pos(data_pos);
    let misfit = |c: &Cursor<'a>, what: &str| {
        bad(
            c,
            data_pos,
            format!("{what} does not fit dtype {}", dt.to_dtype_str()),
        )
    };
    // numpy's str_/bytes_ scalars are exactly as wide as their value: a width far past the value
    // is no numpy scalar, and its padding would be allocated by a length the input only states
    let too_wide = |c: &Cursor<'a>, n: usize| {
        bad(
            c,
            type_pos,
            format!(
                "dtype {} is wider than its value ({n} long): a numpy scalar is as wide as its value",
                dt.to_dtype_str()
            ),
        )
    };
    let mut b: Vec<u8> = match &dt {
        NumpyDtype::Bool => vec![c.read_bool().map_err(|_| misfit(c, "a non-bool"))? as u8],
        NumpyDtype::Int { size, signed, .. } => {
            let v: i128 = match c.read_int().map_err(|_| misfit(c, "a non-integer"))? {
                Int::I(v) => v.into(),
                Int::U(v) => v.into(),
            };
            let bits = 8 * u32::from(*size);
            let (lo, hi) = if *signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if v < lo || v > hi {
                return Err(misfit(c, &format!("{v}")));
            }
            v.to_le_bytes()[..*size as usize].to_vec()
        }
        NumpyDtype::Float { size: 2, .. } => {
            let v = c.read_f64().map_err(|_| misfit(c, "a non-number"))?;
            half::f16::from_f64(v).to_le_bytes().to_vec()
        }
        NumpyDtype::Float { size: 4, .. } => {
            let v = c.read_f32().map_err(|_| misfit(c, "a non-number"))?;
            v.to_le_bytes().to_vec()
        }
        NumpyDtype::Float { .. } => {
            let v = c.read_f64().map_err(|_| misfit(c, "a non-number"))?;
            v.to_le_bytes().to_vec()
        }
        // `.item()` of a nanosecond datetime64/timedelta64 is an int (coarser units give Python
        // datetime objects, which msgpack cannot write); openpi's own decoder refuses these
        // (np.datetime64(int) wants a unit), the dtype here has one
        NumpyDtype::Datetime { .. } | NumpyDtype::Timedelta { .. } => match c.read_int() {
            Ok(Int::I(v)) => v.to_le_bytes().to_vec(),
            _ => return Err(misfit(c, "a non-int64")),
        },
        NumpyDtype::Unicode { chars, .. } => {
            let v = c.read_str().map_err(|_| misfit(c, "a non-str"))?;
            let n = v.chars().count();
            if n > *chars || v.contains('\0') {
                return Err(misfit(c, &format!("{v:?}")));
            }
            if *chars > n + PAD_SLACK {
                return Err(too_wide(c, n));
            }
            let mut b: Vec<u8> = v.chars().flat_map(|ch| (ch as u32).to_le_bytes()).collect();
            b.resize(4 * chars, 0);
            b
        }
        NumpyDtype::Bytes { len } => {
            let (v, _) = c
                .read_str_or_bin()
                .map_err(|_| misfit(c, "a non-bytes value"))?;
            if v.len() > *len {
                return Err(misfit(c, &format!("{} bytes", v.len())));
            }
            if *len > v.len() + PAD_SLACK {
                return Err(too_wide(c, v.len()));
            }
            let mut b = v.to_vec();
            b.resize(*len, 0);
            b
        }
        _ => {
            return Err(bad(
                c,
                type_pos,
                format!("dtype {} is not supported", dt.to_dtype_str()),
            ))
        }
    };
    // the bytes above are little-endian; a '>' dtype stores each unit swapped
    let unit = match dt {
        NumpyDtype::Unicode { .. } => 4,
        _ => dt.itemsize(),
    };
    if dt.order() == ByteOrder::Big {
        b.chunks_mut(unit).for_each(|u| u.reverse());
    }
    Ok(Special::Array(NdArray {
        type_raw,
        type_pos,
        kind: None,
        scalar: true,
        shape: Vec::new(),
        len: 1,
        data: Cow::Owned(b),
        data_pos,
        js: false,
        openpi: true,
        type_text: false,
        spelling: Spelling::default(),
    }))
}

impl<'a> NdArray<'a> {
    /// Whether `data` lies in the input at `data_pos` (fast paths and zero-copy slices rely on it).
    pub fn in_place(&self) -> bool {
        matches!(self.data, Cow::Borrowed(_))
    }

    /// Parse the dtype (callers cache it by `type_raw`).
    pub fn parse_dtype(&self, base: u64) -> Result<NumpyDtype> {
        if self.type_text {
            // (`base` is the offset of the text itself)
            let s = std::str::from_utf8(self.type_raw).unwrap_or("");
            if matches!(
                s.trim_start_matches(['|', '<', '>', '=']),
                "O" | "O8" | "object"
            ) {
                return Ok(NumpyDtype::Object);
            }
            return NumpyDtype::parse(s).map_err(|e| e.at_offset(base));
        }
        let mut c = Cursor::new(self.type_raw, base);
        let structured = self.kind == Some(b"V") || c.peek_kind()? == Kind::Array;
        if self.kind == Some(b"O") {
            return Ok(NumpyDtype::Object);
        }
        if structured {
            parse_descr(&mut c, 0)
        } else {
            let (s, _) = c.read_str_or_bin()?;
            let s = std::str::from_utf8(s).map_err(|_| {
                c.error_at(
                    0,
                    ErrorKind::UnsupportedDtype(String::from_utf8_lossy(s).into()),
                )
            })?;
            if self.js {
                return js_dtype(s).ok_or_else(|| {
                    c.error_at(
                        0,
                        ErrorKind::UnsupportedDtype(format!("{s} (msgpack-numpy-js)")),
                    )
                });
            }
            let d = NumpyDtype::parse(s).map_err(|e| e.at_offset(base))?;
            if matches!(d, NumpyDtype::Object) {
                // msgpack_numpy before 0.4.8 (and srsly today) wrote an object array's buffer
                // itself, `kind` b'': object pointers, not a pickle; no reader can recover them
                return Err(c.error_at(
                    0,
                    ErrorKind::UnsupportedDtype(format!(
                        "{s} {}: an object array written before msgpack_numpy 0.4.8 (or by \
                         srsly), whose data is memory addresses in the writing process, not \
                         values: no reader can recover them",
                        match self.kind {
                            Some(k) => format!("with kind '{}'", String::from_utf8_lossy(k)),
                            None => "with no kind".to_string(),
                        }
                    )),
                ));
            }
            Ok(d)
        }
    }

    /// The entries of its Arrow form that no data byte backs (see [`NdArray::check_len`]): a
    /// reader bounds their sum over a batch, as one array's are bounded, else a file of many
    /// tiny `shape: [1048576, 0]` arrays made gigabytes of offsets.
    pub fn unbacked_entries(&self, dt: &NumpyDtype) -> u128 {
        structure_entries(&self.shape, dt).saturating_sub(2 * self.data.len() as u128)
    }

    /// Check `data` holds exactly `len × itemsize` bytes.
    pub fn check_len(&self, dt: &NumpyDtype, base: u64) -> Result<()> {
        if matches!(dt, NumpyDtype::Object) {
            return Ok(());
        }
        let want = self.len.checked_mul(dt.itemsize());
        if want != Some(self.data.len()) {
            return Err(Error::new(ErrorKind::InvalidNdarray(format!(
                "data has {} bytes, but shape {:?} of {} needs {}",
                self.data.len(),
                self.shape,
                dt.to_dtype_str(),
                want.map_or("more than 2^64".to_string(), |w| w.to_string())
            )))
            .at_offset(base + self.data_pos as u64));
        }
        // A zero axis or zero-size elements describe structure that no data bytes back (shape
        // (2**62, 0) holds 2**62 empty rows in 0 bytes): bound it, so a few hostile bytes cannot
        // make the decoder allocate by the declared shape. Real data never comes near the
        // bound: with elements of at least one byte, the entries are at most twice the data.
        let entries = structure_entries(&self.shape, dt);
        let limit = 2 * self.data.len() as u128 + MAX_EMPTY_ENTRIES;
        if entries > limit {
            return Err(Error::new(ErrorKind::InvalidNdarray(format!(
                "shape {:?} of {} describes {entries} (sub-)array entries for {} data bytes \
                 (at most {limit}): refused",
                self.shape,
                dt.to_dtype_str(),
                self.data.len()
            )))
            .at_offset(base + self.type_pos as u64));
        }
        Ok(())
    }
}

/// Entries without data bytes an ndarray may describe (empty sub-arrays, zero-size elements);
/// also what the ndarrays of one batch of a column may describe together (readers keep the sum).
pub(crate) const MAX_EMPTY_ENTRIES: u128 = 1 << 20;

/// How many list/struct entries the Arrow form of an ndarray of `shape` and `dt` has: one per
/// element of every leading axis, and per element, one per sub-array level of each field.
fn structure_entries(shape: &[usize], dt: &NumpyDtype) -> u128 {
    let mut entries = 0u128;
    let mut prod = 1u128;
    for &d in shape {
        prod = prod.saturating_mul(d as u128);
        entries = entries.saturating_add(prod);
    }
    if let NumpyDtype::Struct(fields) = dt {
        let per_elem = fields.iter().fold(0u128, |acc, f| {
            acc.saturating_add(structure_entries(&f.shape, &f.dtype).max(1))
        });
        entries = entries.saturating_add(prod.saturating_mul(per_elem));
    }
    entries
}

/// msgpack-numpy-js type codes (JavaScript typed arrays) → numpy dtypes.
fn js_dtype(s: &str) -> Option<NumpyDtype> {
    let (order, code) = match s.as_bytes().first()? {
        b'<' | b'>' | b'=' | b'|' => (&s[..1], &s[1..]),
        _ => ("<", s),
    };
    let np = match code {
        "U8" => "u1",
        "b" | "B" => "i1",
        "i2" | "i4" | "i8" | "u2" | "u4" | "u8" | "f4" | "f8" => code,
        "I2" => "u2",
        "I4" => "u4",
        "I8" => "u8",
        _ => return None,
    };
    NumpyDtype::parse(&format!("{order}{np}")).ok()
}

/// A structured descr: `[[name, type, shape?], ...]`, `type` a dtype string or a nested descr.
fn parse_descr(c: &mut Cursor<'_>, depth: usize) -> Result<NumpyDtype> {
    if depth > 32 {
        return Err(c.error(ErrorKind::TooDeep(32)));
    }
    let bad = |c: &Cursor<'_>, m: &str| {
        c.error(ErrorKind::UnsupportedDtype(format!(
            "structured descr: {m}"
        )))
    };
    if depth == 0 && c.peek_kind()? != Kind::Array {
        // (`kind` b"V" with a dtype string: msgpack_numpy fails on it too)
        let k = format!("{:?}", c.peek_kind()?).to_lowercase();
        return Err(bad(
            c,
            &format!("kind b'V' needs 'type' as a list of [name, type] fields, found {k}"),
        ));
    }
    let n = c.read_array_len()?;
    let mut fields = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let parts = c.read_array_len()?;
        if !(2..=3).contains(&parts) {
            return Err(bad(
                c,
                "a field must be [name, type] or [name, type, shape]",
            ));
        }
        let (name, _) = c.read_str_or_bin()?;
        let name = std::str::from_utf8(name)
            .map_err(|_| bad(c, "field name is not UTF-8"))?
            .to_string();
        let dtype = match c.peek_kind()? {
            Kind::Array => parse_descr(c, depth + 1)?,
            Kind::Str | Kind::Bin => {
                let p = c.offset();
                let (s, _) = c.read_str_or_bin()?;
                let s = std::str::from_utf8(s).map_err(|_| bad(c, "type is not UTF-8"))?;
                NumpyDtype::parse(s).map_err(|e| e.at_offset(p))?
            }
            _ => return Err(bad(c, "field type must be a string or a descr")),
        };
        let mut shape = Vec::new();
        if parts == 3 {
            let k = c.read_array_len()?;
            for _ in 0..k.min(MAX_NDIM + 1) {
                match c.read_int()? {
                    Int::I(d) if d >= 0 => shape.push(d as usize),
                    _ => return Err(bad(c, "field shape must hold non-negative ints")),
                }
            }
            if k > MAX_NDIM {
                return Err(bad(c, "field shape has too many dimensions"));
            }
        }
        // numpy refuses a repeated name (unnamed padding fields are all "")
        if !name.is_empty() && fields.iter().any(|f: &StructField| f.name == name) {
            return Err(bad(c, &format!("field name {name:?} appears twice")));
        }
        fields.push(StructField { name, dtype, shape });
    }
    // a descr of one unnamed field is a plain void dtype ('|V8')
    if let [f] = fields.as_slice() {
        if f.name.is_empty() && f.shape.is_empty() {
            if let NumpyDtype::Void { .. } | NumpyDtype::Object = f.dtype {
                return Ok(f.dtype.clone());
            }
        }
    }
    Ok(NumpyDtype::Struct(fields))
}
