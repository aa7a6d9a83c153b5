//! The one public error type: what went wrong, and where (byte offset, record, column path).

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error with its position in the input. Boxed so `Result` stays one word wide.
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    offset: Option<u64>,
    record: Option<u64>,
    path: Option<String>,
    file: Option<String>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The input ended inside a value.
    #[error("truncated input: need {need} bytes, {have} left")]
    Truncated {
        /// Bytes the value declares.
        need: u64,
        /// Bytes left in the input.
        have: u64,
    },
    /// A byte that is not valid MessagePack here (reserved marker 0xc1, wrong container type, ...).
    #[error("invalid msgpack: {0}")]
    InvalidMsgpack(String),
    /// A msgpack-numpy map that is malformed (bad `shape`, `data` length, key types, ...).
    #[error("invalid ndarray: {0}")]
    InvalidNdarray(String),
    /// A numpy dtype string this crate does not read, or a malformed one.
    #[error("unsupported numpy dtype {0:?}")]
    UnsupportedDtype(String),
    /// An object (`'O'`) array: its data is a pickle, which is never executed.
    #[error("object array (dtype 'O') holds a pickle, which is never unpickled; pass object_arrays=\"raw\" (CLI: --object-arrays raw) to keep its bytes as Binary")]
    ObjectArray,
    /// Two values of one column have types that do not unify.
    #[error("type conflict: {0} (to read it anyway: schema_overrides gives the column one type, conflicts=\"binary\" keeps its raw msgpack values; CLI --schema-overrides COLUMN=TYPE, --conflicts binary)")]
    TypeConflict(String),
    /// A value whose kind its column's type, decided before it was read (from the first rows,
    /// another file of a scan, or a schema given), does not take.
    #[error("type conflict: {0} (the column's type came from other rows: the first ones with infer_rows, another file of a scan, or a schema given; infer_rows=None types it from every row, schema_overrides gives it one; CLI: no --infer-rows, --schema-overrides COLUMN=TYPE)")]
    NotItsType(String),
    /// A value that does not fit the type a caller gave its column (schema overrides, a schema)
    /// exactly: an int out of range, a float that would become infinite, a finer time.
    #[error("{0}")]
    Inexact(String),
    /// A map key that is not a string, a duplicate key, or a key not in the schema.
    #[error("bad key: {0}")]
    Key(String),
    /// The input nests deeper than the configured limit.
    #[error("nesting deeper than {0} levels (see ReaderBuilder::with_max_depth)")]
    TooDeep(usize),
    /// Decoding would exceed the configured cap on decoded bytes.
    #[error(
        "decoded data exceeds the limit of {0} bytes (see ReaderBuilder::with_max_decoded_bytes)"
    )]
    LimitExceeded(u64),
    /// The layout does not fit the input (e.g. `columns` with unequal lengths).
    #[error("layout: {0}")]
    Layout(String),
    /// More distinct keys than the reader takes as columns.
    #[error("more than {0} columns (distinct keys): records whose keys keep changing? raise the limit with max_columns (ReaderBuilder::with_max_columns)")]
    TooManyColumns(usize),
    /// The input is not MessagePack (text, another file format, compressed bytes): what it is.
    #[error("{0}")]
    NotMsgpack(String),
    /// Options that contradict each other or the files given; the message says what to change.
    #[error("{0}")]
    Usage(String),
    /// Arrow data this crate cannot write as msgpack-numpy.
    #[error("cannot encode: {0}")]
    Unsupported(String),
    /// An error from arrow-rs (its I/O errors become [`ErrorKind::Io`]).
    #[error(transparent)]
    Arrow(arrow_schema::ArrowError),
    /// An error from the parquet crate (its I/O errors become [`ErrorKind::Io`]).
    #[error(transparent)]
    Parquet(parquet::errors::ParquetError),
    /// An I/O error: shown as one line, the system's words and what to do.
    #[error("{}", io_message(.0))]
    Io(#[from] std::io::Error),
}

/// An I/O error as one line: the system's words without "(os error N)" or the path of a
/// temporary file (tempfile adds it; the caller names the user's file), then what to do.
pub(crate) fn io_message(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let inner = e
        .get_ref()
        .and_then(|r| r.source())
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or(e);
    let mut msg = inner.to_string();
    if let Some(i) = msg.find(" (os error ") {
        msg.truncate(i);
    }
    let hint = match inner.kind() {
        K::StorageFull => {
            "; free some space or write elsewhere, then run again (nothing was replaced)"
        }
        K::QuotaExceeded => "; the disk quota is used up: free some space or write elsewhere",
        K::PermissionDenied => "; check the permissions of the file and of its directory",
        K::ReadOnlyFilesystem => "; the file system is read-only: write elsewhere",
        _ => "",
    };
    format!("{msg}{hint}")
}

type Boxed = Box<dyn std::error::Error + Send + Sync>;

/// An error arrow or parquet boxed on its way through them: ours, or an I/O error, as it was;
/// anything else handed back.
fn unbox(e: Boxed) -> std::result::Result<ErrorKind, Boxed> {
    let e = match e.downcast::<Error>() {
        Ok(ours) => return Ok(ours.0.kind),
        Err(e) => e,
    };
    e.downcast::<std::io::Error>().map(|io| ErrorKind::Io(*io))
}

impl From<arrow_schema::ArrowError> for ErrorKind {
    fn from(e: arrow_schema::ArrowError) -> Self {
        use arrow_schema::ArrowError as A;
        match e {
            A::IoError(_, io) => ErrorKind::Io(io),
            A::ExternalError(inner) => {
                unbox(inner).unwrap_or_else(|e| ErrorKind::Arrow(A::ExternalError(e)))
            }
            e => ErrorKind::Arrow(e),
        }
    }
}

impl From<parquet::errors::ParquetError> for ErrorKind {
    fn from(e: parquet::errors::ParquetError) -> Self {
        use parquet::errors::ParquetError as P;
        match e {
            P::External(inner) => {
                unbox(inner).unwrap_or_else(|e| ErrorKind::Parquet(P::External(e)))
            }
            e => ErrorKind::Parquet(e),
        }
    }
}

impl Error {
    /// A new error of this kind, with no position yet.
    pub fn new(kind: ErrorKind) -> Self {
        Error(Box::new(Inner {
            kind,
            offset: None,
            record: None,
            path: None,
            file: None,
        }))
    }
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }
    /// Byte offset in the (decompressed) input where the problem was found.
    pub fn offset(&self) -> Option<u64> {
        self.0.offset
    }
    /// Index of the record (row) being read, counted from 0 over the whole input.
    pub fn record(&self) -> Option<u64> {
        self.0.record
    }
    /// Column path, e.g. `frames.depth`.
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }
    /// The file (or URL) the error is about, when more than one may be in play.
    pub fn file(&self) -> Option<&str> {
        self.0.file.as_deref()
    }
    /// Name the file the error is about, unless one is already named (the innermost wins), so a
    /// message never names it twice.
    pub fn in_file(mut self, file: &std::path::Path) -> Self {
        self.0
            .file
            .get_or_insert_with(|| file.display().to_string());
        self
    }
    /// Set the byte offset unless one is already known (the innermost position wins).
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.0.offset.get_or_insert(offset);
        self
    }
    /// Set the record index unless one is already known.
    pub fn at_record(mut self, record: u64) -> Self {
        self.0.record.get_or_insert(record);
        self
    }
    /// Shift a known record index by `rows` (the rows before the chunk it was counted in).
    pub fn add_record(mut self, rows: u64) -> Self {
        if let Some(r) = &mut self.0.record {
            *r += rows;
        }
        self
    }
    /// Prepend a path segment, as the error unwinds out of nested columns.
    pub fn prepend_path(mut self, segment: &str) -> Self {
        self.0.path = Some(match self.0.path.take() {
            // a list element's index follows its list's name: `emb[1]`, not `emb.[1]`
            Some(p) if p.starts_with('[') => format!("{segment}{p}"),
            Some(p) => format!("{segment}.{p}"),
            None => segment.to_string(),
        });
        self
    }
}

pub(crate) fn err<T>(kind: ErrorKind) -> Result<T> {
    Err(Error::new(kind))
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.0.file {
            write!(f, "{file}: ")?;
        }
        write!(f, "{}", self.0.kind)?;
        let mut sep = " at ";
        if let Some(o) = self.0.offset {
            write!(f, "{sep}byte {o}")?;
            sep = ", ";
        }
        if let Some(r) = self.0.record {
            write!(f, "{sep}record {r}")?;
            sep = ", ";
        }
        if let Some(p) = &self.0.path {
            write!(f, "{sep}column {p:?}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.kind.source()
    }
}

impl<E: Into<ErrorKind>> From<E> for Error {
    fn from(e: E) -> Self {
        Error::new(e.into())
    }
}

impl From<Error> for arrow_schema::ArrowError {
    fn from(e: Error) -> Self {
        arrow_schema::ArrowError::ExternalError(Box::new(e))
    }
}

/// What a caught panic said (its `&str` or `String` payload), for the error that reports it.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_position() {
        let e = Error::new(ErrorKind::UnsupportedDtype(">c32".into()))
            .at_offset(1834)
            .at_record(12)
            .prepend_path("depth")
            .prepend_path("frames");
        assert_eq!(
            e.to_string(),
            "unsupported numpy dtype \">c32\" at byte 1834, record 12, column \"frames.depth\""
        );
        assert_eq!(std::mem::size_of::<Result<()>>(), 8);
    }
}
