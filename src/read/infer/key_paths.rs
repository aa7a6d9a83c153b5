//! Which keys of maps nested in a record were msgpack bin (Python `bytes` keys, as msgpack_numpy's
//! own tests write `{'x': {b'foo': ...}}`), by where they sit: the struct fields they become are
//! tagged [`meta::KEY`] so the writer writes them back as bin.
//!
//! By path, not by name: a name is bin in one map and str in another, and structs that no map
//! made (structured ndarrays, ext values) share names with maps. A path is the column's name,
//! then a key for each map level and `*` for a list's items, each name written as its length,
//! `:` and its bytes, so no two places share a path whatever bytes keys hold. Only the first time
//! a path is seen counts, as for top-level keys, so inference that skips rows which fit (the fast
//! path) tags what a walk of every row does.

use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::FastMap;
use crate::types::meta;

/// The segment of a list's items (a name's segment starts with a digit).
const ITEM: char = '*';

/// Append name `name` to `path` (its length in digits without `fmt`: this runs for every key
/// of every row inference walks).
fn push_name(path: &mut String, name: &str) {
    let (mut n, mut digits, mut i) = (name.len(), [0u8; 20], 20);
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    path.extend(digits[i..].iter().map(|&d| d as char));
    path.push(':');
    path.push_str(name);
}

#[derive(Debug, Default)]
pub(crate) struct KeyPaths {
    /// where the value being inferred sits (`None`: not tracked, e.g. a `values` layout row)
    path: Option<String>,
    /// every nested key path seen, first seen as bin (`true`) or str
    seen: FastMap<String, bool>,
    /// whether any of them is bin
    any: bool,
}

impl KeyPaths {
    /// Track the keys inside the value of column `name` until [`KeyPaths::stop`].
    pub(crate) fn start(&mut self, name: &str) {
        let p = self.path.get_or_insert_with(String::new);
        p.clear();
        push_name(p, name);
    }

    pub(crate) fn stop(&mut self) {
        self.path = None;
    }

    /// Note key `key` of the map at the current path, then step into its value. Returns what
    /// [`KeyPaths::leave`] takes to step out again.
    pub(crate) fn enter_key(&mut self, key: &str, bin: bool) -> Option<usize> {
        let p = self.path.as_mut()?;
        let len = p.len();
        push_name(p, key);
        if !self.seen.contains_key(p.as_str()) {
            self.seen.insert(p.clone(), bin);
            self.any |= bin;
        }
        Some(len)
    }

    /// Step into the items of a list at the current path.
    pub(crate) fn enter_item(&mut self) -> Option<usize> {
        let p = self.path.as_mut()?;
        let len = p.len();
        p.push(ITEM);
        Some(len)
    }

    /// Step into a place whose keys are not tracked (an integer-keyed map's values).
    pub(crate) fn enter_untracked(&mut self) -> Option<String> {
        self.path.take()
    }

    pub(crate) fn leave_untracked(&mut self, saved: Option<String>) {
        self.path = saved;
    }

    pub(crate) fn leave(&mut self, len: Option<usize>) {
        if let (Some(p), Some(len)) = (self.path.as_mut(), len) {
            p.truncate(len);
        }
    }

    /// Merge what another walk (a later part of the file) saw: its first sightings count where
    /// this one has none.
    pub(crate) fn merge(&mut self, other: KeyPaths) {
        for (k, bin) in other.seen {
            self.any |= *self.seen.entry(k).or_insert(bin);
        }
    }

    /// Whether any nested key was first seen as bin (else [`KeyPaths::tag`] changes nothing).
    pub(crate) fn any_bin(&self) -> bool {
        self.any
    }

    /// `f` (column `f.name()`) with the struct fields inside it tagged bin exactly where their
    /// key was (a tag already there where it was not, as on a field shared from another column,
    /// is taken off). Nothing is rebuilt where nothing changes.
    pub(crate) fn tag(&self, f: Field) -> Field {
        if !self.any_bin() {
            return f;
        }
        let mut path = String::new();
        push_name(&mut path, f.name());
        match self.tag_type(f.data_type(), &mut path) {
            Some(dt) => f.with_data_type(dt),
            None => f,
        }
    }

    /// `dt` tagged as [`KeyPaths::tag`] says, or `None` where that is `dt` itself.
    fn tag_type(&self, dt: &DataType, path: &mut String) -> Option<DataType> {
        let item = |f: &FieldRef, path: &mut String| -> Option<FieldRef> {
            let len = path.len();
            path.push(ITEM);
            let t = self.tag_type(f.data_type(), path);
            path.truncate(len);
            Some(Arc::new(f.as_ref().clone().with_data_type(t?)))
        };
        match dt {
            DataType::Struct(fs) => {
                let mut changed = false;
                let out: Fields = fs
                    .iter()
                    .map(|f| {
                        let len = path.len();
                        push_name(path, f.name());
                        let t = self.tag_type(f.data_type(), path);
                        let bin = self.seen.get(path.as_str()) == Some(&true);
                        path.truncate(len);
                        let tagged = f.metadata().get(meta::KEY).map(String::as_str) == Some("bin");
                        if t.is_none() && bin == tagged {
                            return f.clone();
                        }
                        changed = true;
                        let mut g = f.as_ref().clone();
                        if let Some(t) = t {
                            g = g.with_data_type(t);
                        }
                        let mut md = g.metadata().clone();
                        if bin {
                            md.insert(meta::KEY.to_string(), "bin".to_string());
                        } else {
                            md.remove(meta::KEY);
                        }
                        Arc::new(g.with_metadata(md))
                    })
                    .collect();
                changed.then_some(DataType::Struct(out))
            }
            DataType::List(f) => item(f, path).map(DataType::List),
            DataType::LargeList(f) => item(f, path).map(DataType::LargeList),
            DataType::FixedSizeList(f, n) => item(f, path).map(|f| DataType::FixedSizeList(f, *n)),
            // an integer-keyed map's entries are not msgpack keys
            _ => None,
        }
    }
}
