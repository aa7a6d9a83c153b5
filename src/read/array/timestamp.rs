//! msgpack timestamps (ext -1) and numpy datetime/timedelta scalars.

use super::*;
use crate::error::{ErrorKind, Result};
use crate::wire::cursor::{Cursor, Kind};
use arrow_array::*;
use arrow_buffer::{NullBufferBuilder, ScalarBuffer};
use arrow_schema::TimeUnit;
use std::sync::Arc;

pub(crate) struct TimestampDecoder {
    pub(crate) unit: TimeUnit,
    pub(crate) tz: Option<Arc<str>>,
    pub(crate) v: Vec<i64>,
    pub(crate) nulls: NullBufferBuilder,
    pub(crate) ctx: Ctx,
}

/// msgpack timestamp ext payload → (seconds, nanoseconds).
pub(crate) fn parse_timestamp(d: &[u8]) -> Option<(i64, u32)> {
    match d.len() {
        4 => Some((u32::from_be_bytes(d.try_into().ok()?) as i64, 0)),
        8 => {
            let v = u64::from_be_bytes(d.try_into().ok()?);
            Some(((v & 0x3_ffff_ffff) as i64, (v >> 34) as u32))
        }
        12 => Some((
            i64::from_be_bytes(d[4..].try_into().ok()?),
            u32::from_be_bytes(d[..4].try_into().ok()?),
        )),
        _ => None,
    }
}

impl ArrayDecoder for TimestampDecoder {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<()> {
        match c.peek_kind()? {
            Kind::Nil => {
                c.read_nil()?;
                self.append_null();
                Ok(())
            }
            Kind::Ext => {
                let p = c.pos();
                let (t, d) = c.read_ext()?;
                let bad = |m: &str| c.error_at(p, ErrorKind::InvalidMsgpack(m.to_string()));
                let (s, ns) = if t == -1 {
                    parse_timestamp(d).ok_or_else(|| bad("timestamp ext of wrong length"))?
                } else {
                    return Err(bad(&format!(
                        "expected a timestamp (ext -1), found ext {t}"
                    )));
                };
                if ns >= 1_000_000_000 {
                    return Err(bad("timestamp nanoseconds out of range"));
                }
                // ticks a second, and nanoseconds a tick: a coarser unit than the value's is an
                // error, not a silent cut
                let (per_s, tick) = match self.unit {
                    TimeUnit::Second => (1, 1_000_000_000),
                    TimeUnit::Millisecond => (1_000, 1_000_000),
                    TimeUnit::Microsecond => (1_000_000, 1_000),
                    TimeUnit::Nanosecond => (1_000_000_000, 1),
                };
                let inexact = |m: String| c.error_at(p, ErrorKind::Inexact(m));
                if ns % tick != 0 {
                    return Err(inexact(format!(
                        "timestamp with {ns} ns past the second does not fit Timestamp({:?}) exactly",
                        self.unit
                    )));
                }
                // (in i128: the earliest nanosecond, -9223372036.854775808 s, is -9223372037 s
                // plus nanoseconds, whose seconds alone overflow)
                let v = i64::try_from(i128::from(s) * i128::from(per_s) + i128::from(ns / tick))
                    .map_err(|_| {
                        inexact(format!(
                            "timestamp of {s} s is out of the range of Timestamp({:?}); pass a schema with a coarser unit",
                            self.unit
                        ))
                    })?;
                self.v.push(v);
                self.nulls.append_non_null();
                let _ = &self.ctx;
                Ok(())
            }
            _ => Err(found(c, "timestamp (ext -1)")),
        }
    }
    fn append_null(&mut self) {
        self.v.push(0);
        self.nulls.append_null();
    }
    fn finish(&mut self) -> Result<ArrayRef> {
        let v = ScalarBuffer::from(std::mem::take(&mut self.v));
        let n = self.nulls.finish();
        Ok(match self.unit {
            TimeUnit::Second => {
                Arc::new(TimestampSecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Millisecond => {
                Arc::new(TimestampMillisecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Microsecond => {
                Arc::new(TimestampMicrosecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
            TimeUnit::Nanosecond => {
                Arc::new(TimestampNanosecondArray::new(v, n).with_timezone_opt(self.tz.clone()))
            }
        })
    }
}
