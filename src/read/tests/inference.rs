//! Inference on varied inputs: reads with the fast path on and off, on one thread and in
//! pieces, give the same schema and batches (case by case: `fast_cases`).

use super::marked::{marked_value, MARKED_KINDS};
use super::*;

/// What reading `data` with `b` gives (schema and batches, or the error and where), with the fast
/// path of inference on or off, the walk on one thread or cut into pieces on three.
pub(super) fn fast_or_full(b: &ReaderBuilder, data: &[u8], fast: bool, pieces: bool) -> String {
    let mut b = b.clone();
    if pieces {
        b = b.with_threads(Some(3)).with_walk_piece_bytes(64);
    }
    b.fast_infer = fast;
    match b.build_from_slice(data).and_then(|r| {
        let schema = r.schema();
        Ok((schema, r.collect_batches()?))
    }) {
        Ok((schema, batches)) => format!("{schema:?}\n{batches:?}"),
        Err(e) => format!("error: {e} at {:?} record {:?}", e.offset(), e.record()),
    }
}

/// What [`varied_records`] makes records from: the keys, each key's usual kind of value, each
/// row's shape and values (and how each value is picked), and the row from which the keys come
/// in another order; at most `max_rows` rows.
#[allow(clippy::type_complexity)]
fn varied_records_input(
    max_rows: usize,
) -> impl proptest::strategy::Strategy<Value = (Vec<usize>, Vec<u8>, Vec<(u8, Vec<(u8, u64)>)>, usize)>
{
    (
        proptest::collection::vec(0usize..8, 1..7),
        proptest::collection::vec(0u8..MARKED_KINDS, 8),
        proptest::collection::vec(
            (
                0u8..14,
                proptest::collection::vec((0u8..40, proptest::num::u64::ANY), 8),
            ),
            1..max_rows,
        ),
        0usize..max_rows,
    )
}

/// Records mostly alike, as [`fast_inference_equals_full_inference_on_any_records`] describes
/// them: each record's bytes.
fn varied_records(
    keys: Vec<usize>,
    kinds: &[u8],
    rows: &[(u8, Vec<(u8, u64)>)],
    switch_at: usize,
) -> Vec<Vec<u8>> {
    const NAMES: [&str; 8] = [
        "id",
        "name",
        "x",
        "flag",
        "tags",
        "ts",
        "fifteen_chars_x",
        "a_rather_long_column_name",
    ];
    let mut keys = keys;
    keys.dedup();
    let mut out = Vec::new();
    for (row, (shape, values)) in rows.iter().enumerate() {
        let mut data = Vec::new();
        // most rows: the keys in order, each column's usual kind of value
        let mut ks = keys.clone();
        if row >= switch_at {
            ks.rotate_left(1);
        }
        let n = ks.len();
        match shape {
            0 => ks.reverse(),
            1 => {
                ks.pop();
            }
            2 => ks.push((ks[0] + 1) % 8),
            4 if n >= 2 => ks.swap(n - 2, n - 1),
            _ => {}
        }
        ks.dedup();
        rmp::encode::write_map_len(&mut data, ks.len() as u32).unwrap();
        for (j, &k) in ks.iter().enumerate() {
            let (pick, v) = values[j];
            // a bin key: the first (shape 3) or the last (shape 5)
            if (*shape == 3 && j == 0) || (*shape == 5 && j + 1 == ks.len()) {
                rmp::encode::write_bin(&mut data, NAMES[k].as_bytes()).unwrap();
            } else {
                rmp::encode::write_str(&mut data, NAMES[k]).unwrap();
            }
            // now and then any other kind of value
            let kind = if pick < 30 {
                kinds[k]
            } else {
                (v >> 40) as u8 % MARKED_KINDS
            };
            data.extend(marked_value(kind, v));
        }
        out.push(data);
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Records mostly alike (the same keys in the same order, as files are), sometimes with keys
    /// dropped, reordered, added or as bin (the first or a later one), and from some row on in
    /// another order for good; keys of up to 25 bytes; values of every marker, with the types
    /// of a column widening, narrowing and conflicting at any row; the input cut anywhere: the
    /// fast path (and its record template) reads exactly what full inference does, schema and
    /// batches or error, in either conflict mode, also when the walk is cut into pieces on threads.
    #[test]
    fn fast_inference_equals_full_inference_on_any_records(
        (keys, kinds, rows, switch_at) in varied_records_input(150),
        cut in proptest::option::of(0usize..20_000),
        binary in proptest::bool::ANY,
    ) {
        let mut data = varied_records(keys, &kinds, &rows, switch_at).concat();
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let b = ReaderBuilder::new()
            .with_layout(Layout::Records)
            .with_conflicts(if binary { Conflicts::Binary } else { Conflicts::Error });
        let full = fast_or_full(&b, &data, false, false);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, true), &full);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    /// The same records as the elements of a `columns` map's list (a dict of lists), beside a
    /// list of any values and a column of another length now and then, the input cut anywhere:
    /// the fast path reads what full inference does, in the columns layout and in `auto`; lists
    /// decoded in ranges on several threads give the batches and errors one thread does. The
    /// one walk of a first map that tells both whether it is the only object and whether it is a
    /// columns map says what the two walks it replaces say (or fails as the first of them does).
    #[test]
    fn fast_inference_equals_full_inference_on_list_columns(
        (keys, kinds, rows, switch_at) in varied_records_input(120),
        other in proptest::collection::vec((0u8..MARKED_KINDS, proptest::num::u64::ANY), 0..120),
        cut in proptest::option::of(0usize..20_000),
        after in proptest::option::of(0u8..MARKED_KINDS),
        binary in proptest::bool::ANY,
        batch in proptest::option::of(1usize..12),
        whole in proptest::bool::ANY,
    ) {
        // (values of other kinds than their column's rarer than in the records test, and no str
        // that is not UTF-8 as a column's kind: lists that read are the common case here)
        let kinds: Vec<u8> = kinds.iter().map(|&k| if k == 16 { 15 } else { k }).collect();
        let rows: Vec<(u8, Vec<(u8, u64)>)> = rows
            .into_iter()
            .map(|(shape, vs)| (shape, vs.into_iter().map(|(p, v)| (p / 4, v)).collect()))
            .collect();
        let recs = varied_records(keys, &kinds, &rows, switch_at);
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 1 + u32::from(!other.is_empty())).unwrap();
        rmp::encode::write_str(&mut data, "r").unwrap();
        rmp::encode::write_array_len(&mut data, recs.len() as u32).unwrap();
        data.extend(recs.concat());
        if !other.is_empty() {
            // as long as the records mostly (a columns map), else a records map of two lists
            let n = if other.len() > 100 { other.len() } else { recs.len() };
            rmp::encode::write_str(&mut data, "o").unwrap();
            rmp::encode::write_array_len(&mut data, n as u32).unwrap();
            for i in 0..n {
                // mostly ints of any marker, now and then anything
                let (kind, v) = other[i % other.len()];
                data.extend(marked_value(if kind < 20 { kind % 11 } else { kind }, v));
            }
        }
        // another object after it: then the map is a record
        if let Some(kind) = after {
            data.extend(marked_value(kind, 7));
        }
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let conflicts = if binary { Conflicts::Binary } else { Conflicts::Error };
        for layout in [Layout::Columns, Layout::Auto] {
            let b = ReaderBuilder::new().with_layout(layout).with_conflicts(conflicts);
            let full = fast_or_full(&b, &data, false, false);
            proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
            // list columns decoded on the pool as the walk finds them (cut into ranges of at most
            // a batch), or in turn on one thread
            // (a whole map asked for: its lists' ranges joined into one batch)
            let b = match batch {
                Some(n) => b.with_batch_size(n),
                None => b,
            }
            .with_whole_chunks(whole);
            let (one, four) = (b.clone().with_threads(Some(1)), b.with_threads(Some(4)));
            proptest::prop_assert_eq!(
                &fast_or_full(&one, &data, true, false),
                &fast_or_full(&four, &data, true, false)
            );
        }
        let b = ReaderBuilder::new();
        // a first map taken as a columns map unless its inference says otherwise: the plan the
        // walk of its forms makes
        let plan = |r: Result<crate::read::plan::Plan>| match r {
            Ok(p) => format!("{:?} {:?} {:?}", p.layout, p.container, p.schema),
            Err(e) => format!("error: {e} at {:?}", e.offset()),
        };
        proptest::prop_assert_eq!(
            plan(crate::read::plan::plan(&b, &data)),
            plan(crate::read::plan::plan_walking_forms(&b, &data))
        );
        let show = |r: Result<(bool, Option<bool>)>| match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error: {e} at {:?}", e.offset()),
        };
        let two_walks = crate::read::plan::only_object(&b, &data).and_then(|single| {
            let mut c = Cursor::new(&data, 0);
            let columns = if single && c.peek_kind().ok() == Some(crate::wire::cursor::Kind::Map) {
                Some(crate::read::plan::is_columns_map(&mut c, &b)?)
            } else {
                None
            };
            Ok((single, columns))
        });
        // (where the one walk has no answer of its own, it is the first walk's)
        let one = crate::read::plan::first_object(&b, &data);
        match (&one, &two_walks) {
            (Ok((s, Some(_))), Ok((s2, None))) => proptest::prop_assert_eq!(s, s2),
            _ => proptest::prop_assert_eq!(show(one), show(two_walks)),
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Integers of every marker (as other writers pick them, not only the smallest) decode to
    /// the values rmp reads from the same bytes, into Int64, UInt64 and Int16 columns (one that
    /// does not fit is an error) and Float64 columns (rounded as numpy's `float()` does).
    #[test]
    fn integers_of_any_marker_decode_as_rmp_reads_them(
        values in proptest::collection::vec((0u8..11, proptest::num::u64::ANY), 1..200),
    ) {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Float64Type, Int16Type, Int64Type, UInt64Type};
        use arrow_schema::{DataType, Field};
        let mut data = Vec::new();
        let mut want: Vec<i128> = Vec::new();
        for &(kind, v) in &values {
            let bytes = marked_value(kind, v);
            want.push(match rmp::decode::read_int::<i64, _>(&mut &bytes[..]) {
                Ok(i) => i as i128,
                Err(_) => rmp::decode::read_int::<u64, _>(&mut &bytes[..]).unwrap() as i128,
            });
            data.extend([0x81, 0xa1, b'v']);
            data.extend(bytes);
        }
        let read = |dt: DataType| {
            let schema = Arc::new(arrow_schema::Schema::new(vec![Field::new("v", dt, true)]));
            ReaderBuilder::new()
                .with_layout(Layout::Records)
                .with_schema(schema)
                .build_from_slice(&data)
                .and_then(|r| r.collect::<Result<Vec<_>>>())
                .map(|b| arrow_select::concat::concat_batches(&b[0].schema(), &b).unwrap())
        };
        let fits = |lo: i128, hi: i128| want.iter().all(|w| (lo..=hi).contains(w));
        for dt in [DataType::Int64, DataType::UInt64, DataType::Int16, DataType::Float64] {
            let got = read(dt.clone());
            let ok = match dt {
                DataType::Int64 => fits(i64::MIN as i128, i64::MAX as i128),
                DataType::UInt64 => fits(0, u64::MAX as i128),
                DataType::Int16 => fits(i16::MIN as i128, i16::MAX as i128),
                // float64 takes any integer, rounded to the nearest float64 as numpy does
                _ => true,
            };
            proptest::prop_assert_eq!(got.is_ok(), ok, "{:?}: {:?}", dt, got.as_ref().err());
            let Ok(b) = got else { continue };
            let col = b.column(0);
            let back: Vec<i128> = match dt {
                DataType::Int64 => col.as_primitive::<Int64Type>().values().iter().map(|&x| x as i128).collect(),
                DataType::UInt64 => col.as_primitive::<UInt64Type>().values().iter().map(|&x| x as i128).collect(),
                DataType::Int16 => col.as_primitive::<Int16Type>().values().iter().map(|&x| x as i128).collect(),
                _ => {
                    let back = col.as_primitive::<Float64Type>().values();
                    let rounded: Vec<f64> = want.iter().map(|&w| w as f64).collect();
                    proptest::prop_assert_eq!(&back[..], &rounded[..]);
                    continue;
                }
            };
            proptest::prop_assert_eq!(&back, &want);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// A `values` stream or top-level array of values mostly of one kind (runs the fast path
    /// steps over by their marker), now and then another, the input cut anywhere, with batches
    /// bounded by rows and bytes, `n_rows` and `infer_rows`: the fast walk gives the same schema,
    /// batches (their bounds and contents) or error as full inference, on one thread or in pieces.
    #[test]
    fn values_walked_by_marker_equal_full_inference(
        kinds in proptest::collection::vec(0u8..MARKED_KINDS, 1..4),
        rows in proptest::collection::vec((0u8..40, 0usize..4, proptest::num::u64::ANY), 1..300),
        array in proptest::bool::ANY,
        cut in proptest::option::of(0usize..4_000),
        batch_size in 1usize..40,
        batch_bytes in 1usize..300,
        n_rows in proptest::option::of(0usize..300),
        infer_rows in proptest::option::of(1usize..300),
    ) {
        let mut data = Vec::new();
        if array {
            rmp::encode::write_array_len(&mut data, rows.len() as u32).unwrap();
        }
        for &(pick, k, v) in &rows {
            let kind = if pick < 36 { kinds[k % kinds.len()] } else { (v >> 40) as u8 % MARKED_KINDS };
            data.extend(marked_value(kind, v));
        }
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        let b = ReaderBuilder::new()
            .with_layout(Layout::Values)
            .with_batch_size(batch_size)
            .with_batch_bytes(batch_bytes)
            .with_n_rows(n_rows)
            .with_infer_rows(infer_rows);
        let full = fast_or_full(&b, &data, false, false);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, false), &full);
        proptest::prop_assert_eq!(&fast_or_full(&b, &data, true, true), &full);
    }
}

/// Batches bounded by bytes only (`batch_size` at its largest): the values fast path's bound on
/// rows does not overflow, and the batches are those of full inference.
#[test]
fn values_with_unbounded_batch_rows_walk_as_full_inference() {
    let data: Vec<u8> = (0..200).flat_map(|i| marked_value(8, i)).collect();
    let b = ReaderBuilder::new()
        .with_layout(Layout::Values)
        .with_batch_size(usize::MAX)
        .with_batch_bytes(64);
    let full = fast_or_full(&b, &data, false, false);
    assert!(full.matches("RecordBatch").count() > 2, "{full}");
    assert_eq!(fast_or_full(&b, &data, true, false), full);
}

/// Columns whose types the caller gives (schema overrides) are skipped by the fast path until
/// one holds an ndarray, as full inference skips them: the same schema and batches or error,
/// whatever the given column holds (every marker, a map, an ndarray from some row on).
#[test]
fn given_columns_walk_as_full_inference() {
    let f8_pair = {
        let mut o = Vec::new();
        rmp::encode::write_map_len(&mut o, 5).unwrap();
        for (k, v) in [
            ("nd", vec![0xc3]),
            ("type", s("<f8")),
            ("kind", vec![0xc4, 0]),
            ("shape", vec![0x91, 2]),
            ("data", [vec![0xc4, 16], vec![0; 16]].concat()),
        ] {
            rmp::encode::write_bin(&mut o, k.as_bytes()).unwrap();
            o.extend(v);
        }
        o
    };
    let given = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Float64, true),
        Field::new("h", DataType::Utf8, true),
    ]));
    for kind in 0..MARKED_KINDS {
        for nd_at in [None, Some(0), Some(7)] {
            let mut data = Vec::new();
            for row in 0..40u64 {
                rmp::encode::write_map_len(&mut data, 3).unwrap();
                rmp::encode::write_str(&mut data, "id").unwrap();
                rmp::encode::write_uint(&mut data, row).unwrap();
                rmp::encode::write_str(&mut data, "g").unwrap();
                if nd_at == Some(row as usize) {
                    data.extend(&f8_pair);
                } else if row % 3 == 0 {
                    data.extend(marked_value(kind, row * 7919));
                } else {
                    data.extend(marked_value(12, row));
                }
                rmp::encode::write_str(&mut data, "h").unwrap();
                data.extend(marked_value(if row % 5 == 0 { kind } else { 15 }, row));
            }
            let b = ReaderBuilder::new()
                .with_layout(Layout::Records)
                .with_schema_overrides(Some(given.clone()));
            let full = fast_or_full(&b, &data, false, false);
            assert_eq!(
                fast_or_full(&b, &data, true, false),
                full,
                "kind {kind}, ndarray at {nd_at:?}"
            );
            assert_eq!(
                fast_or_full(&b, &data, true, true),
                full,
                "kind {kind}, ndarray at {nd_at:?} in pieces"
            );
        }
    }
}

/// An ndarray map as msgpack_numpy writes it, its shape's integers given as written and its
/// payload `bytes` long (7s).
fn nd_map(ty: &str, shape: &[Vec<u8>], bytes: usize) -> Vec<u8> {
    let mut dims = Vec::new();
    rmp::encode::write_array_len(&mut dims, shape.len() as u32).unwrap();
    dims.extend(shape.concat());
    map(&[
        ("nd", vec![0xc3]),
        ("type", s(ty)),
        ("kind", bin(b"")),
        ("shape", dims),
        ("data", bin(&vec![7u8; bytes])),
    ])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// A dict of a list of same-shape ndarrays (msgpack_numpy's list of arrays), with other
    /// elements anywhere in it (another shape, dtype or header encoding of the same shape, nil, a
    /// payload of the wrong length, a scalar), beside a list of ints, cut anywhere: the elements
    /// that repeat the one before them, checked at once on every thread, read as full inference
    /// reads them, and as on one thread.
    #[test]
    fn repeated_ndarrays_of_a_list_column_read_as_full_inference_does(
        n in 1usize..10_000,
        odd in proptest::collection::vec((0usize..10_000, 0u8..7), 0..4),
        cut in proptest::option::of(0usize..400_000),
        whole in proptest::bool::ANY,
    ) {
        let same = nd_map("<f4", &[vec![2]], 8);
        let mut elems = vec![same; n];
        for (at, kind) in odd {
            if let Some(e) = elems.get_mut(at) {
                *e = match kind {
                    0 => nd_map("<f4", &[vec![3]], 12),
                    1 => nd_map("<f8", &[vec![2]], 16),
                    2 => vec![0xc0],
                    3 => nd_map("<f4", &[vec![2]], 12),
                    // the same shape, its 2 written as a uint16: other bytes, the same type
                    4 => nd_map("<f4", &[vec![0xcd, 0, 2]], 8),
                    5 => nd_map("<i4", &[vec![2]], 8),
                    _ => vec![0x05],
                };
            }
        }
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 2).unwrap();
        rmp::encode::write_str(&mut data, "a").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(elems.concat());
        rmp::encode::write_str(&mut data, "i").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(std::iter::repeat_n(0x01, n));
        if let Some(cut) = cut {
            data.truncate(cut.min(data.len()));
        }
        // (the table, or the error: a list's batches end where its ranges do, which depends on
        // the threads)
        let read = |b: ReaderBuilder, fast: bool| {
            let mut b = b;
            b.fast_infer = fast;
            match b.build_from_slice(&data).and_then(|r| {
                let schema = r.schema();
                let batches = r.collect_batches()?;
                Ok(arrow_select::concat::concat_batches(&schema, &batches)?)
            }) {
                Ok(t) => format!("{t:?}"),
                Err(e) => format!("error: {e} at {:?} record {:?}", e.offset(), e.record()),
            }
        };
        let b = ReaderBuilder::new().with_whole_chunks(whole);
        let full = read(b.clone().with_threads(Some(1)), false);
        proptest::prop_assert_eq!(&read(b.clone().with_threads(Some(1)), true), &full);
        proptest::prop_assert_eq!(&read(b.with_threads(Some(4)), true), &full);
    }
}

/// The repeats of a list's ndarrays are checked in windows of 4,096 × threads elements, then twice
/// as many, from the element after the first: an element of another shape on either side of a
/// window's end is found, and so is its type.
#[test]
fn an_odd_ndarray_where_a_window_of_repeats_ends_is_typed() {
    let w = 4096 * rayon::current_num_threads();
    for at in [w, w + 1, 3 * w, 3 * w + 1] {
        let n = 3 * w + 10;
        let mut elems = vec![nd_map("<f4", &[vec![2]], 8); n];
        elems[at] = nd_map("<f4", &[vec![3]], 12);
        let mut data = Vec::new();
        rmp::encode::write_map_len(&mut data, 1).unwrap();
        rmp::encode::write_str(&mut data, "a").unwrap();
        rmp::encode::write_array_len(&mut data, n as u32).unwrap();
        data.extend(elems.concat());
        let b = ReaderBuilder::new();
        let fast = fast_or_full(&b, &data, true, false);
        assert_eq!(
            fast,
            fast_or_full(&b, &data, false, false),
            "odd element {at}"
        );
        assert!(fast.contains("List("), "odd element {at}: {}", &fast[..300]);
    }
}
