//! The fast path of inference: whether a row adds nothing to the type of the rows before it,
//! checked without allocating. Most rows of a file are like the ones before them, so most of an
//! exact walk runs here; the slow path ([`Inferrer::value`]) sees only rows that widen the type.

use super::Columns;

use super::{Inferrer, Ty};
use crate::options::Dialect;
use crate::types::NumpyDtype;
use crate::wire::cursor::{Cursor, Int, Kind};
use crate::wire::keys::{key_eq, KeyIndex};
use crate::wire::ndarray::{is_special_ext, key_id, probe, Special, MAX_SPECIAL_KEYS};

/// The bytes of an ndarray map up to its data payload (msgpack_numpy writes `data` last), as
/// seen and validated once: a later map starting with the same bytes has the same dtype and shape.
pub(super) struct NdHeader {
    prefix: Vec<u8>,
    data_len: usize,
    native: NumpyDtype,
    shape: Vec<usize>,
    itemsize: usize,
    /// in `prefix`: where the `shape` value starts and ends and where the `data` value starts,
    /// when `type` and `kind` come before the shape. A map with these bytes around another shape
    /// (the rows of a ragged column) has the same dtype.
    ragged: Option<(usize, usize, usize)>,
    /// where the structured dtype `native` last compared equal with sits (0: none): comparing
    /// two structured dtypes field by field was four fifths of such a column's walk. Forgotten
    /// whenever types may change ([`Inferrer::forget_dtype_matches`]).
    matched: usize,
}

/// Dimensions a ragged header match reads without allocating; more go the slow way.
const RAGGED_NDIM: usize = 8;

/// How many distinct ndarray headers [`Inferrer::fits_row`] remembers.
const MAX_HEADERS: usize = 16;

/// The map header and keys of a record that fitted, to compare the next records with: records
/// of one file mostly hold the same keys in the same order, and a record whose header and keys
/// are the template's bytes needs only its values checked (against the columns' types as they
/// are now), most of them by their marker byte. Column indices stay valid as types widen:
/// merging keeps the columns' order and adds new ones at the end, and a template made for fewer
/// columns is dropped.
pub(super) struct RowTemplate {
    keys: Vec<TemplateKey>,
    /// how many columns the type had
    columns: usize,
    /// records in a row seen with other keys
    misses: u32,
}

struct TemplateKey {
    /// the bytes before the key's value: the key as written (the first key: the map header too)
    before: Bytes16,
    column: usize,
}

/// A few bytes to compare with the input: as one 16-byte word where they fit in one.
struct Bytes16 {
    bytes: Vec<u8>,
    word: u128,
    mask: u128,
}

impl Bytes16 {
    fn new(bytes: &[u8]) -> Self {
        let mut w = [0u8; 16];
        let n = bytes.len().min(16);
        w[..n].copy_from_slice(&bytes[..n]);
        let mask = if n == 16 {
            u128::MAX
        } else {
            (1u128 << (8 * n)) - 1
        };
        Bytes16 {
            bytes: bytes.to_vec(),
            word: u128::from_le_bytes(w),
            mask,
        }
    }

    /// Whether `buf[p..]` starts with these bytes.
    #[inline]
    fn at(&self, buf: &[u8], p: usize) -> bool {
        match buf.get(p..p + 16) {
            Some(w) if self.bytes.len() <= 16 => {
                let w = u128::from_le_bytes(w.try_into().unwrap_or([0; 16]));
                (w ^ self.word) & self.mask == 0
            }
            _ => buf.get(p..p + self.bytes.len()) == Some(&self.bytes[..]),
        }
    }
}

/// Records in a row with other keys than the template's after which it is dropped, for the next
/// record that fits to make a new one.
const TEMPLATE_MISSES: u32 = 64;

/// [`marker_fit`]: the marker alone does not say (look at the value).
const GENERIC: u8 = 0;
/// [`marker_fit`]: a fixstr whose bytes are valid UTF-8 fits.
const FIXSTR: u8 = 0xff;

/// What a value's marker byte `b` alone says about whether it fits `acc`: its size in bytes
/// (marker included) when any value of that marker fits, [`FIXSTR`], or [`GENERIC`].
#[inline(always)]
fn marker_fit(b: u8, acc: &Ty) -> u8 {
    let (any_int, big_int, neg_int) = match acc {
        Ty::Int { big, neg } => (true, *big, *neg),
        Ty::F64 | Ty::Given(_) => (true, true, true),
        _ => (false, false, false),
    };
    match (b, acc) {
        (0xc0, _) => 1,
        // a given column's value is skipped, not checked: a scalar's marker gives its size
        (0xc2 | 0xc3, Ty::Given(_)) => 1,
        (0xca, Ty::Given(_)) => 5,
        (0xcb, Ty::Given(_)) => 9,
        (0xc2 | 0xc3, Ty::Bool) => 1,
        // integers: unsigned ones up to 2^63-1 fit any integer column; negative ones only where
        // negatives were seen, larger ones only where they were (a float column takes all)
        (0x00..=0x7f, _) if any_int => 1,
        (0xcc, _) if any_int => 2,
        (0xcd, _) if any_int => 3,
        (0xce, _) if any_int => 5,
        (0xcf, _) if big_int => 9,
        (0xe0..=0xff, _) if neg_int => 1,
        (0xd0, _) if neg_int => 2,
        (0xd1, _) if neg_int => 3,
        (0xd2, _) if neg_int => 5,
        (0xd3, _) if neg_int => 9,
        (0xcb, Ty::F64) => 9,
        (0xca, Ty::F32 | Ty::F64) => 5,
        (0xa0..=0xbf, Ty::Str) => FIXSTR,
        _ => GENERIC,
    }
}

/// The size of the value at `buf[p]` when its marker alone says it fits `acc` and its bytes are
/// there ([`marker_fit`]).
#[inline(always)]
fn size_by_marker(buf: &[u8], p: usize, acc: &Ty) -> Option<usize> {
    let b = *buf.get(p)?;
    let n = match marker_fit(b, acc) {
        // a uint64 below 2^63 (its first byte's top bit clear) fits any integer column: Python's
        // msgpack writes every int from 2^32 up so
        GENERIC if b == 0xcf && matches!(acc, Ty::Int { .. }) && *buf.get(p + 1)? < 0x80 => 9,
        GENERIC => return None,
        FIXSTR => fixstr_size(buf, p)?,
        n => n as usize,
    };
    (p + n <= buf.len()).then_some(n)
}

/// From `buf[p]`, the values that fit `acc` by their marker byte alone (the first thing
/// [`Inferrer::fits`] tries, so these are values it takes), while `go(start)` says to go on with
/// the one starting at `start`. Returns where the values stepped over end.
#[inline]
pub(crate) fn skip_marker_fits(
    buf: &[u8],
    mut p: usize,
    acc: &Ty,
    mut go: impl FnMut(usize) -> bool,
) -> usize {
    while let Some(n) = size_by_marker(buf, p, acc) {
        if !go(p) {
            break;
        }
        p += n;
    }
    p
}

/// Whether an ndarray of `dims` and native dtype `native` adds nothing to a column of ndarrays
/// of `dt` and `shape` (`None` where the length varies); `widths`: the column's `U`/`S` rows
/// were of several widths (`dt` the widest).
fn nd_fits(
    dims: &[usize],
    native: &NumpyDtype,
    dt: &NumpyDtype,
    shape: &[Option<usize>],
    widths: bool,
) -> bool {
    nd_shape_fits(dims, shape)
        && if widths {
            // a column of strings of several widths (`dt` the widest): a row no wider adds nothing
            match (native.text_width(), dt.text_width()) {
                (Some((u, w)), Some((v, widest))) if u == v && w <= widest => {
                    native_eq(native, &dt.with_text_width(w))
                }
                _ => false,
            }
        } else {
            native_eq(native, dt)
        }
}

/// Whether dimensions `dims` fit a column's `shape` (`None` where the length varies).
fn nd_shape_fits(dims: &[usize], shape: &[Option<usize>]) -> bool {
    dims.len() == shape.len()
        && dims
            .iter()
            .zip(shape)
            .all(|(a, b)| b.is_none_or(|b| b == *a))
}

/// `native == buffers::native(dt)`, without making a copy of `dt` (a structured dtype's fields
/// were cloned and freed for every row).
fn native_eq(native: &NumpyDtype, dt: &NumpyDtype) -> bool {
    match dt {
        NumpyDtype::Struct(_)
        | NumpyDtype::Bool
        | NumpyDtype::Bytes { .. }
        | NumpyDtype::Void { .. } => native == dt,
        _ => *native == crate::types::buffers::native(dt),
    }
}

/// Where the ndarray map at `c` has its `shape` value (start, end) and its `data` value (start),
/// when `type` and `kind` come before the shape and the data after it.
fn shape_span(c: &Cursor<'_>, dialect: Dialect, depth: usize) -> Option<(usize, usize, usize)> {
    let mut d = c.clone();
    let n = d.read_map_len().ok()?;
    let mut at = [None; 6];
    for _ in 0..n {
        let id = key_id(d.read_str_or_bin().ok()?.0, dialect) as usize;
        let start = d.pos();
        d.skip(depth).ok()?;
        if let Some(a) = at.get_mut(id) {
            *a = Some((start, d.pos()));
        }
    }
    let (s0, s1) = at[4]?;
    let before = |a: Option<(usize, usize)>| a.is_none_or(|(_, end)| end <= s0);
    let data = at[5]?.0;
    (before(at[2]) && before(at[3]) && s1 <= data).then_some((s0, s1, data))
}

/// The size of the fixstr at `buf[p]` when its bytes are there and valid UTF-8.
#[inline]
fn fixstr_size(buf: &[u8], p: usize) -> Option<usize> {
    let n = (*buf.get(p)? & 0x1f) as usize;
    let s = buf.get(p + 1..p + 1 + n)?;
    (s.is_ascii() || std::str::from_utf8(s).is_ok()).then_some(1 + n)
}

impl Inferrer {
    /// The fast path of inference over many rows: whether the row (a map) at `c` adds nothing to
    /// `acc`, the type of the rows so far (`acc.merge(row) == acc`), checked without allocating.
    /// On `true` the cursor is past the row. On `false` (a new key, a wider type, an ndarray
    /// header not seen yet, anything unusual or malformed) it has not moved, and the caller infers
    /// the row the slow way, which also reports any error.
    pub(crate) fn fits_row(&mut self, acc: &Ty, c: &mut Cursor<'_>) -> bool {
        self.fits_row_at(acc, c, 0)
    }

    /// [`Inferrer::fits_row`] for a map `depth` levels down (a list element of a `columns` map
    /// is at depth 1); any other value of a row-like list goes to [`Inferrer::fits`].
    pub(crate) fn fits_element(&mut self, acc: &Ty, c: &mut Cursor<'_>, depth: usize) -> bool {
        if matches!(acc, Ty::Struct(_)) {
            return self.fits_row_at(acc, c, depth);
        }
        let mut d = c.clone();
        let ok = self.fits(acc, &mut d, depth);
        if ok {
            *c = d;
        }
        ok
    }

    fn fits_row_at(&mut self, acc: &Ty, c: &mut Cursor<'_>, depth: usize) -> bool {
        let Ty::Struct(fields) = acc else {
            return false;
        };
        let mut d = c.clone();
        // a template made before the columns changed is dropped (a new one comes from the next
        // record that fits)
        if let Some(mut t) = self
            .row_template
            .take()
            .filter(|t| t.columns == fields.len())
        {
            match self.fits_template(&t, fields, &mut d, depth) {
                Some(ok) => {
                    t.misses = 0;
                    self.row_template = Some(t);
                    if ok {
                        *c = d;
                    }
                    return ok;
                }
                // other keys than the template's: kept until that is the common case
                None => {
                    t.misses += 1;
                    if t.misses < TEMPLATE_MISSES {
                        self.row_template = Some(t);
                    }
                    d = c.clone();
                }
            }
        }
        let ok = depth < self.opts.max_depth
            && matches!(d.peek_kind(), Ok(Kind::Map))
            && self.fits_map(fields, &mut d, depth);
        if ok {
            if self.row_template.is_none() {
                self.row_template = self.make_template(fields, c, depth);
            }
            *c = d;
        }
        ok
    }

    /// Whether the record at `c` fits, by template `t`: `None` when its map header and keys are
    /// not the template's bytes (then [`Inferrer::fits_map`] decides), else what `fits_map` would
    /// answer, with the cursor past the record on `true`. The keys being those of a record that
    /// fitted, they are known, distinct and none a special map's key: only values are checked.
    fn fits_template(
        &mut self,
        t: &RowTemplate,
        fields: &Columns,
        c: &mut Cursor<'_>,
        depth: usize,
    ) -> Option<bool> {
        let buf = c.buf();
        let mut p = c.pos();
        for k in &t.keys {
            if !k.before.at(buf, p) {
                return None;
            }
            p += k.before.bytes.len();
            let (_, ty) = fields.get_index(k.column)?;
            if let Some(n) = size_by_marker(buf, p, ty) {
                p += n;
            } else {
                c.set_pos(p);
                if depth == 0 {
                    self.cur_flagged = self.nested_flagged.get(k.column).copied().unwrap_or(false);
                    self.cur_col = k.column;
                }
                if !self.fits(ty, c, depth + 1) {
                    return Some(false);
                }
                p = c.pos();
            }
        }
        c.set_pos(p);
        Some(true)
    }

    /// The template of the record at `c` (`depth` levels down), which has just fitted `fields`
    /// (`None` where records nest too deep for the values to be checked one level further down).
    fn make_template(&self, fields: &Columns, c: &Cursor<'_>, depth: usize) -> Option<RowTemplate> {
        if self.opts.max_depth <= depth + 1 {
            return None;
        }
        let mut d = c.clone();
        // (an empty map has no key to carry the map header: no template)
        let n = d.read_map_len().ok().filter(|&n| n > 0)?;
        let mut keys = Vec::with_capacity(n);
        // the first key's bytes begin with the map header
        let mut from = c.pos();
        for _ in 0..n {
            let (key, _) = d.read_str_or_bin().ok()?;
            let column = std::str::from_utf8(key)
                .ok()
                .and_then(|k| fields.get_index_of(k))?;
            keys.push(TemplateKey {
                before: Bytes16::new(&d.buf()[from..d.pos()]),
                column,
            });
            d.skip(self.opts.max_depth).ok()?;
            from = d.pos();
        }
        Some(RowTemplate {
            keys,
            columns: fields.len(),
            misses: 0,
        })
    }

    /// [`Inferrer::fits_row`] for a row of the values layout (any value).
    pub(crate) fn fits_value(&mut self, acc: &Ty, c: &mut Cursor<'_>) -> bool {
        let mut d = c.clone();
        let ok = self.fits(acc, &mut d, 0);
        if ok {
            *c = d;
        }
        ok
    }

    fn fits(&mut self, acc: &Ty, c: &mut Cursor<'_>, depth: usize) -> bool {
        if depth >= self.opts.max_depth {
            return false;
        }
        // the common one-marker values, decided from the marker byte alone (the helpers below
        // each look the marker up again): a third of a scalar record stream's walk
        if let Some(n) = size_by_marker(c.buf(), c.pos(), acc) {
            c.set_pos(c.pos() + n);
            return true;
        }
        let Ok(kind) = c.peek_kind() else {
            return false;
        };
        match (kind, acc) {
            // which given columns hold ndarrays is known once one row shows it
            (_, Ty::Given(true)) => self.skip_given(c, depth),
            // until then a value fits unless it is the first ndarray (only maps and the npy
            // extension can be): what `given_value` says of it, without its allocations
            (_, Ty::Given(false)) => !self.is_ndarray(c) && self.skip_given(c, depth),
            // a raw column takes any value the slow path can read (not one it refuses, such as a
            // str that is not UTF-8)
            (_, Ty::Raw) => self.value(c, depth).is_ok(),
            (Kind::Nil, _) => c.read_nil().is_ok(),
            (Kind::Bool, Ty::Bool) => c.read_bool().is_ok(),
            (Kind::Int, Ty::F64) => c.read_int().is_ok(),
            (Kind::Int, Ty::Int { big, neg }) => match c.read_int() {
                Ok(Int::I(v)) => v >= 0 || *neg,
                Ok(Int::U(_)) => *big,
                Err(_) => false,
            },
            (Kind::F32, Ty::F32 | Ty::F64) => c.read_f32().is_ok(),
            (Kind::F64, Ty::F64) => c.read_f64().is_ok(),
            (Kind::Str, Ty::Str) => c.read_str().is_ok(),
            (Kind::Bin, Ty::Bin) => c.read_str_or_bin().is_ok(),
            // a timestamp (ext -1) as `value` takes it: its length checked (its range when
            // decoded); any other ext by its code
            (Kind::Ext, Ty::Ext | Ty::Timestamp) => {
                !is_special_ext(c, self.opts.dialect, self.opts.npy_ext)
                    && match c.read_ext() {
                        Ok((-1, d)) => {
                            matches!(acc, Ty::Timestamp) && matches!(d.len(), 4 | 8 | 12)
                        }
                        Ok(_) => matches!(acc, Ty::Ext),
                        Err(_) => false,
                    }
            }
            // a Python complex: the probe parses it (whatever else it is takes the slow path)
            (Kind::Map, Ty::Complex) => matches!(
                probe(
                    c,
                    self.opts.dialect,
                    self.opts.npy_ext,
                    self.opts.max_depth - depth
                ),
                Ok(Some(Special::Complex(..)))
            ),
            // a nested map keyed by integers (an empty one: the slow path says what it is)
            (Kind::Map, Ty::Map(kt, vt)) if depth > 0 => match c.read_map_len() {
                Ok(n) => {
                    n > 0
                        && (0..n).all(|_| {
                            matches!(c.peek_kind(), Ok(Kind::Int))
                                && self.fits(kt, c, depth + 1)
                                && self.fits(vt, c, depth + 1)
                        })
                }
                Err(_) => false,
            },
            (Kind::Array, Ty::List(inner, len)) => match c.read_array_len() {
                Ok(n) => {
                    if len.is_some_and(|len| len != n)
                        || (n > 0 && depth + 1 >= self.opts.max_depth)
                    {
                        return false;
                    }
                    // items that fit by their marker alone (a list of numbers) in one loop
                    let mut k = 0;
                    let p = skip_marker_fits(c.buf(), c.pos(), inner, |_| {
                        k += 1;
                        k <= n
                    });
                    c.set_pos(p);
                    (k.min(n)..n).all(|_| self.fits(inner, c, depth + 1))
                }
                Err(_) => false,
            },
            (Kind::Map, Ty::Struct(fields)) => self.fits_map(fields, c, depth),
            (
                Kind::Map,
                Ty::Nd {
                    dt, shape, widths, ..
                },
            ) => self.fits_ndarray(dt, shape, *widths, c, depth),
            (
                Kind::Ext,
                Ty::Nd {
                    dt, shape, widths, ..
                },
            ) if self.opts.npy_ext.is_some() => self.fits_ndarray(dt, shape, *widths, c, depth),
            _ => false,
        }
    }

    /// A user map whose keys are all in `fields`, once each, with values that fit them, and none
    /// of them a special map's key (a map that may be an ndarray or a complex takes the slow path;
    /// checked here, key by key, rather than in a walk of its own over every record).
    fn fits_map(&mut self, fields: &Columns, c: &mut Cursor<'_>, depth: usize) -> bool {
        let Ok(n) = c.read_map_len() else {
            return false;
        };
        if n > fields.len() {
            return false;
        }
        // a map nested in a record with fewer keys: the slow path notes absent nested keys once
        if n < fields.len() && depth > 0 && self.nested_track && !self.cur_flagged {
            return false;
        }
        let may_be_special = n <= MAX_SPECIAL_KEYS;
        // keys seen, as a bitset over `fields`: a repeated key is an error the slow path reports
        let mut seen = [0u64; 4];
        let mut seen_more = Vec::new();
        if fields.len() > 256 {
            seen_more = vec![0u64; fields.len().div_ceil(64)];
        }
        let mut guess = 0usize;
        for _ in 0..n {
            let key = match c.peek_fixstr() {
                Some(k) => {
                    c.set_pos(c.pos() + 1 + k.len());
                    k
                }
                None => {
                    if !matches!(c.peek_kind(), Ok(Kind::Str | Kind::Bin)) {
                        return false;
                    }
                    let Ok((key, _)) = c.read_str_or_bin() else {
                        return false;
                    };
                    key
                }
            };
            if may_be_special && key_id(key, self.opts.dialect) != 0 {
                return false;
            }
            // keys mostly come in the order of the first row: try the next field first (equal
            // bytes to a known name are valid UTF-8)
            let i = match fields.get_index(guess) {
                Some((k, _)) if key_eq(k.as_bytes(), key) => guess,
                _ => match self.column_of(fields, key, depth) {
                    Some(i) => i,
                    None => return false,
                },
            };
            let words = if seen_more.is_empty() {
                &mut seen[..]
            } else {
                &mut seen_more[..]
            };
            let bit = 1u64 << (i % 64);
            if words[i / 64] & bit != 0 {
                return false;
            }
            words[i / 64] |= bit;
            guess = i + 1;
            if depth == 0 {
                self.cur_flagged = self.nested_flagged.get(i).copied().unwrap_or(false);
                self.cur_col = i;
            }
            if !self.fits(&fields[i], c, depth + 1) {
                return false;
            }
        }
        true
    }

    /// The index of the column named `key` among `fields`. A record's columns (many, in another
    /// order in each record) are found by a [`KeyIndex`] of their names, made again when they
    /// change; a name it gives is checked against `fields`, and a key it does not know (or a
    /// nested map's) is looked up in `fields` itself.
    fn column_of(&mut self, fields: &Columns, key: &[u8], depth: usize) -> Option<usize> {
        let own = || {
            std::str::from_utf8(key)
                .ok()
                .and_then(|k| fields.get_index_of(k))
        };
        if depth > 0 || fields.len() < 16 {
            return own();
        }
        // (columns are only ever added at the end: those new since are added to the table, so
        // a walk meeting a new key every few records does not make it again each time)
        let at = fields as *const Columns as usize;
        let known = self.column_index.1.len();
        if self.column_index.0 != at || known > fields.len() {
            self.column_index = (at, KeyIndex::new(fields.keys().map(|k| k.as_bytes())));
        } else if known < fields.len() {
            let new = fields.keys().skip(known).map(|k| k.as_bytes());
            self.column_index.1.extend(new);
        }
        match self.column_index.1.get(key) {
            Some(i)
                if fields
                    .get_index(i)
                    .is_some_and(|(k, _)| key_eq(k.as_bytes(), key)) =>
            {
                Some(i)
            }
            _ => own(),
        }
    }

    /// Forget which column dtypes the headers matched (by address): the types walked may change
    /// (the slow path is about to infer a value, or pieces' types were merged).
    pub(crate) fn forget_dtype_matches(&mut self) {
        // (called for every value the slow path walks: nothing to do unless a match was kept)
        if std::mem::take(&mut self.dtype_matched) {
            self.headers.iter_mut().for_each(|h| h.matched = 0);
        }
    }

    /// A given column's value skipped (a record's: by the last one's bytes,
    /// [`crate::wire::skip_memo::SkipMemo`]).
    fn skip_given(&mut self, c: &mut Cursor<'_>, depth: usize) -> bool {
        if depth != 1 {
            return c.skip(self.opts.max_depth).is_ok();
        }
        let i = self.cur_col;
        if self.skip_memos.len() <= i {
            self.skip_memos.resize_with(i + 1, Default::default);
        }
        self.skip_memos[i].skip(c, self.opts.max_depth).is_ok()
    }

    /// An ndarray with a header seen before (or learnt now) whose dtype and shape fit `acc`.
    fn fits_ndarray(
        &mut self,
        dt: &NumpyDtype,
        shape: &[Option<usize>],
        widths: bool,
        c: &mut Cursor<'_>,
        depth: usize,
    ) -> bool {
        let rest = &c.buf()[c.pos()..];
        let known = self.headers.iter().position(|h| {
            rest.len() >= h.prefix.len() + h.data_len && rest[..h.prefix.len()] == h.prefix[..]
        });
        if known.is_none() {
            if let Some(fits) = self.fits_ragged(dt, shape, widths, c) {
                return fits;
            }
        }
        let Some(i) = known.or_else(|| self.learn_header(c, depth)) else {
            return false;
        };
        let h = &mut self.headers[i];
        let at = dt as *const NumpyDtype as usize;
        let fits = if matches!(dt, NumpyDtype::Struct(_)) && h.matched == at {
            nd_shape_fits(&h.shape, shape) && !widths
        } else {
            nd_fits(&h.shape, &h.native, dt, shape, widths)
        };
        if fits {
            if matches!(dt, NumpyDtype::Struct(_)) {
                h.matched = at;
                self.dtype_matched = true;
            }
            c.set_pos(c.pos() + h.prefix.len() + h.data_len);
        }
        fits
    }

    /// [`Inferrer::fits_ndarray`] for a map whose bytes around its shape are a known header's
    /// (`None` when none is): a shape of positive dimensions that, with the known dtype, takes
    /// the payload's bytes is what the slow path would accept.
    fn fits_ragged(
        &self,
        dt: &NumpyDtype,
        shape: &[Option<usize>],
        widths: bool,
        c: &mut Cursor<'_>,
    ) -> Option<bool> {
        let (buf, at) = (c.buf(), c.pos());
        self.headers.iter().find_map(|h| {
            let (s0, s1, d0) = h.ragged?;
            if buf.get(at..at + s0)? != &h.prefix[..s0] {
                return None;
            }
            let mut d = c.clone();
            d.set_pos(at + s0);
            if !matches!(d.peek_kind(), Ok(Kind::Array)) {
                return None;
            }
            let n = d.read_array_len().ok()?;
            if n > RAGGED_NDIM {
                return None;
            }
            let mut dims = [0usize; RAGGED_NDIM];
            for x in dims.iter_mut().take(n) {
                *x = match d.read_int().ok()? {
                    Int::I(v) if v > 0 => usize::try_from(v).ok()?,
                    _ => return None,
                };
            }
            let tail = &h.prefix[s1..d0];
            let p = d.pos();
            if buf.get(p..p + tail.len())? != tail {
                return None;
            }
            d.set_pos(p + tail.len());
            // a payload of the header's own kind (a raw str or a bin: the map's spelling, which
            // the header's map noted)
            let raw = matches!(h.prefix.get(d0), Some(0xa0..=0xbf | 0xd9..=0xdb));
            match d.peek_kind() {
                Ok(Kind::Str) if raw => {}
                Ok(Kind::Bin) if !raw => {}
                _ => return None,
            }
            let (data, _) = d.read_str_or_bin().ok()?;
            let want = dims[..n]
                .iter()
                .try_fold(h.itemsize, |a, &x| a.checked_mul(x))?;
            if want != data.len() {
                return None;
            }
            let fits = nd_fits(&dims[..n], &h.native, dt, shape, widths);
            if fits {
                *c = d;
            }
            Some(fits)
        })
    }

    /// Validate the ndarray at `c` as [`Inferrer::value`] does and remember its header; `None`
    /// when it is not an ndarray with its data last, or when the slow path has to see it.
    fn learn_header(&mut self, c: &Cursor<'_>, depth: usize) -> Option<usize> {
        let mut d = c.clone();
        let start = d.pos();
        let Ok(Some(Special::Array(nd))) = probe(
            &mut d,
            self.opts.dialect,
            self.opts.npy_ext,
            self.opts.max_depth - depth,
        ) else {
            return None;
        };
        // the fast path knows msgpack-numpy's map headers and `np.save` bytes in an ext value
        // (whose header, from the ext's length on, is as much the same in rows of one dtype and
        // shape), not Flax's ext values
        let npy = nd.type_text
            && self
                .opts
                .npy_ext
                .is_some_and(|code| matches!(c.clone().read_ext(), Ok((t, _)) if t == code));
        if (nd.type_text && !npy) || !nd.in_place() || nd.data_pos + nd.data.len() != d.pos() {
            return None;
        }
        let dt = self.dtype(nd.type_raw, &nd, c.offset_of(0)).ok()?;
        let valid = !matches!(dt, NumpyDtype::Object)
            && nd.check_len(&dt, c.offset_of(0)).is_ok()
            && dt.arrow_type().is_ok();
        // shapes like (0, 5), which Lists lose, are noted by the slow path
        let lost = nd.shape.iter().skip_while(|d| **d != 0).any(|d| *d > 0);
        if !valid || lost {
            return None;
        }
        // as the slow path notes it: the file is written back in the dialect it was read in
        self.note_form(&nd);
        if self.headers.len() >= MAX_HEADERS {
            self.headers.remove(0);
        }
        // (structured dtypes not: their sub-array fields count entries `check_len` bounds)
        let ragged =
            if nd.scalar || npy || dt.itemsize() == 0 || matches!(dt, NumpyDtype::Struct(_)) {
                None
            } else {
                shape_span(c, self.opts.dialect, self.opts.max_depth - depth)
            };
        self.headers.push(NdHeader {
            prefix: c.buf()[start..nd.data_pos].to_vec(),
            data_len: nd.data.len(),
            native: crate::types::buffers::native(&dt),
            shape: nd.shape.clone(),
            itemsize: dt.itemsize(),
            ragged: ragged.map(|(a, b, d)| (a - start, b - start, d - start)),
            matched: 0,
        });
        Some(self.headers.len() - 1)
    }
}
