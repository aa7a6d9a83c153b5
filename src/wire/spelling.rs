//! How a file's msgpack-numpy maps and byte strings were spelled, beyond what they hold.
//!
//! msgpack_numpy 0.4 packed through msgpack 1.0 or later writes bin keys (`b'nd'`), a `kind`
//! entry and bin payloads. Files of other eras read the same but are spelled otherwise:
//! msgpack_numpy before 0.3.9 wrote no `kind`, and msgpack before 1.0 packed with
//! `use_bin_type=False` by default, which writes every `bytes` (keys, `kind`, payloads) as a raw
//! str and never uses str8 (a string of 32-255 bytes takes str16). The reader notes the spelling
//! a file's maps share (schema metadata [`crate::types::meta::SPELLING`]) and the writer spells
//! its output so, which gives such files back byte for byte.

use crate::wire::write::{self as wire};

/// A spelling other than msgpack_numpy 0.4's (the default: every field `false`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Spelling {
    /// the keys of ndarray, numpy scalar and complex maps are str (`'nd'`), not bin
    pub str_keys: bool,
    /// ndarray maps have no `kind` entry (msgpack_numpy before 0.3.9)
    pub no_kind: bool,
    /// bytes are raw strs and there is no str8 (msgpack's `use_bin_type=False`): payloads,
    /// `kind`, Binary values, and strings of 32-255 bytes in str16
    pub raw: bool,
}

impl Spelling {
    /// The metadata value: the words of the fields that are set, comma-separated.
    pub(crate) fn to_meta(self) -> String {
        [
            (self.str_keys, "str-keys"),
            (self.no_kind, "no-kind"),
            (self.raw, "raw"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(",")
    }
    /// The spelling a metadata value names (words it does not know are left out).
    pub(crate) fn from_meta(v: &str) -> Self {
        let has = |w: &str| v.split(',').any(|x| x.trim() == w);
        Spelling {
            str_keys: has("str-keys"),
            no_kind: has("no-kind"),
            raw: has("raw"),
        }
    }
    pub(crate) fn is_default(self) -> bool {
        self == Spelling::default()
    }
    /// A key of an ndarray, numpy scalar or complex map.
    pub(crate) fn key(self, b: &mut Vec<u8>, k: &[u8]) {
        if self.str_keys {
            raw_hdr(b, k.len());
        } else {
            wire::bin_hdr_sized(b, k.len(), wire::bin_forms(k.len())[0]);
        }
        b.extend_from_slice(k);
    }
    /// The header of `n` bytes (a payload, `kind`, a Binary value).
    pub(crate) fn bytes_hdr(self, b: &mut Vec<u8>, n: usize) {
        if self.raw {
            raw_hdr(b, n);
        } else {
            wire::bin_hdr_sized(b, n, wire::bin_forms(n)[0]);
        }
    }
    /// A str value.
    pub(crate) fn str(self, b: &mut Vec<u8>, s: &str) {
        if self.raw {
            raw_hdr(b, s.len());
            b.extend_from_slice(s.as_bytes());
        } else {
            wire::str(b, s);
        }
    }
}

/// A str header as msgpack writes one with `use_bin_type=False` (the spec before str8 and bin):
/// fixstr, else str16, else str32.
fn raw_hdr(b: &mut Vec<u8>, n: usize) {
    if n < 32 {
        b.push(0xa0 | n as u8);
    } else if n < 65536 {
        b.push(0xda);
        b.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        b.push(0xdb);
        b.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// The spellings seen in a file's maps: each fact is kept where every map that shows it agrees.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SpellingSeen {
    /// for each field of [`Spelling`]: (seen set, seen unset)
    str_keys: (bool, bool),
    no_kind: (bool, bool),
    raw: (bool, bool),
}

impl SpellingSeen {
    /// A msgpack-numpy map spelled `s`; `kind_applies`: it is an ndarray's (a numpy scalar's map
    /// has no `kind` in any era).
    pub(crate) fn note(&mut self, s: Spelling, kind_applies: bool) {
        let see = |x: &mut (bool, bool), on: bool| {
            if on {
                x.0 = true
            } else {
                x.1 = true
            }
        };
        see(&mut self.str_keys, s.str_keys);
        see(&mut self.raw, s.raw);
        if kind_applies {
            see(&mut self.no_kind, s.no_kind);
        }
    }
    pub(crate) fn merge(&mut self, o: &SpellingSeen) {
        let or = |a: &mut (bool, bool), b: (bool, bool)| {
            a.0 |= b.0;
            a.1 |= b.1;
        };
        or(&mut self.str_keys, o.str_keys);
        or(&mut self.no_kind, o.no_kind);
        or(&mut self.raw, o.raw);
    }
    /// The facts every map agreed on.
    pub(crate) fn spelling(&self) -> Spelling {
        let all = |x: (bool, bool)| x.0 && !x.1;
        Spelling {
            str_keys: all(self.str_keys),
            no_kind: all(self.no_kind),
            raw: all(self.raw),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw headers as msgpack-python writes them with `use_bin_type=False`: no str8.
    #[test]
    fn raw_headers_skip_str8() {
        let hdr = |n: usize| {
            let mut b = Vec::new();
            raw_hdr(&mut b, n);
            b
        };
        assert_eq!(hdr(0), [0xa0]);
        assert_eq!(hdr(31), [0xbf]);
        assert_eq!(hdr(32), [0xda, 0, 32]);
        assert_eq!(hdr(255), [0xda, 0, 255]);
        assert_eq!(hdr(65535), [0xda, 0xff, 0xff]);
        assert_eq!(hdr(65536), [0xdb, 0, 1, 0, 0]);
    }

    #[test]
    fn metadata_words_round_trip_and_disagreement_drops_a_fact() {
        let s = Spelling {
            str_keys: true,
            no_kind: true,
            raw: false,
        };
        assert_eq!(s.to_meta(), "str-keys,no-kind");
        assert_eq!(Spelling::from_meta(&s.to_meta()), s);
        let mut seen = SpellingSeen::default();
        seen.note(s, true);
        // a numpy scalar says nothing about `kind`
        seen.note(
            Spelling {
                str_keys: true,
                ..Default::default()
            },
            false,
        );
        assert_eq!(seen.spelling(), s);
        // an ndarray with a `kind` where the others had none: `kind` is written
        seen.note(
            Spelling {
                str_keys: true,
                ..Default::default()
            },
            true,
        );
        assert_eq!(seen.spelling().to_meta(), "str-keys");
    }
}
