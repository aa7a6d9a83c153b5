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

use std::fmt::Write;
use std::sync::Arc;

use arrow_schema::{DataType, Field, FieldRef, Fields};

use super::FastMap;
use crate::types::meta;

/// The segment of a list's items (a name's segment starts with a digit).
const ITEM: char = '*';

/// Append name `name` to `path`.
fn push_name(path: &mut String, name: &str) {
    let _ = write!(path, "{}:{name}", name.len());
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

    /// `f` (column `f.name()`) with the struct fields inside it whose key was bin tagged so.
    pub(crate) fn tag(&self, f: Field) -> Field {
        if !self.any_bin() {
            return f;
        }
        let mut path = String::new();
        push_name(&mut path, f.name());
        let dt = self.tag_type(f.data_type(), &mut path);
        f.with_data_type(dt)
    }

    fn tag_type(&self, dt: &DataType, path: &mut String) -> DataType {
        let item = |f: &FieldRef, path: &mut String| -> FieldRef {
            let len = path.len();
            path.push(ITEM);
            let t = self.tag_type(f.data_type(), path);
            path.truncate(len);
            Arc::new(f.as_ref().clone().with_data_type(t))
        };
        match dt {
            DataType::Struct(fs) => DataType::Struct(
                fs.iter()
                    .map(|f| {
                        let len = path.len();
                        push_name(path, f.name());
                        let mut g = f.as_ref().clone();
                        g = g.with_data_type(self.tag_type(f.data_type(), path));
                        if self.seen.get(path.as_str()) == Some(&true) {
                            let mut md = g.metadata().clone();
                            md.insert(meta::KEY.to_string(), "bin".to_string());
                            g = g.with_metadata(md);
                        }
                        path.truncate(len);
                        Arc::new(g)
                    })
                    .collect::<Fields>(),
            ),
            DataType::List(f) => DataType::List(item(f, path)),
            DataType::LargeList(f) => DataType::LargeList(item(f, path)),
            DataType::FixedSizeList(f, n) => DataType::FixedSizeList(item(f, path), *n),
            // an integer-keyed map's entries are not msgpack keys
            other => other.clone(),
        }
    }
}
