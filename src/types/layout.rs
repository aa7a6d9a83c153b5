//! The `auto` layout rule (SPEC §2) as one predicate, so the reader (deciding from bytes) and the
//! writer (deciding whether a lone row must be wrapped so it reads back as a row) agree by
//! construction, and the writer never has to re-read what it wrote.

/// What one value of a map is, as far as the `auto` rule is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueForm {
    /// An ndarray (`nd: True`) of at least one axis; the length of axis 0.
    Ndarray(usize),
    /// A msgpack array of this many items.
    List(usize),
    /// Anything else: a scalar, a 0-d ndarray, a numpy scalar, a map, nil.
    Other,
}

/// Whether one map whose values have these forms is a `columns` map: at least one entry, every
/// value an ndarray of ndim ≥ 1 or a list, all of one length (axis 0). Keys that are not strings
/// make it a records map; callers check that before asking.
pub fn is_columns_map(values: impl IntoIterator<Item = ValueForm>) -> bool {
    let mut len = None;
    for v in values {
        let l = match v {
            ValueForm::Ndarray(l) | ValueForm::List(l) => l,
            ValueForm::Other => return false,
        };
        if *len.get_or_insert(l) != l {
            return false;
        }
    }
    len.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ValueForm::*;

    #[test]
    fn the_auto_rule() {
        assert!(is_columns_map([Ndarray(3), List(3)]));
        assert!(is_columns_map([Ndarray(0)]));
        assert!(!is_columns_map([]), "an empty map is one record");
        assert!(!is_columns_map([Ndarray(3), List(2)]), "lengths differ");
        assert!(!is_columns_map([Ndarray(3), Other]), "a scalar value");
    }
}
