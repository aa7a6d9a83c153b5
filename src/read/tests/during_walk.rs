//! Reads that decode during the walk: whole reads decoding each batch as the walk passes it
//! (`read::ahead`, `with_eager`) and reads of a given schema walked on a thread of their own
//! (`read::piped`), against reads that walk first and decode after.

use super::*;

/// Batches of 64 rows decoded during the walk on two threads (`eager`), or after it on one.
fn eager_or_after(eager: bool) -> ReaderBuilder {
    ReaderBuilder::new()
        .with_batch_size(64)
        .with_eager(eager)
        .with_ahead_min_bytes(0)
        .with_threads(Some(if eager { 2 } else { 1 }))
}

/// Batches decoded during the walk (`with_eager`) are the batches of a read that decodes after
/// it: types that widen in a later batch (int → float, a shape that changes → List) reach the
/// batches decoded before the walk saw it, projections keep their order, and an error in a later
/// batch is the same error at the same record.
#[test]
fn eager_reads_equal_reads_that_decode_after_the_walk() {
    fn nd_f4(values: &[f32]) -> Vec<u8> {
        let mut shape = Vec::new();
        rmp::encode::write_array_len(&mut shape, 1).unwrap();
        rmp::encode::write_uint(&mut shape, values.len() as u64).unwrap();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        map(&[
            ("nd", vec![0xc3]),
            ("type", s("<f4")),
            ("kind", bin(b"")),
            ("shape", shape),
            ("data", bin(&data)),
        ])
    }
    let n = 300usize;
    let rows = |bad: Option<usize>| {
        let mut data = Vec::new();
        for i in 0..n {
            let mut id = Vec::new();
            match bad {
                Some(b) if b == i => rmp::encode::write_str(&mut id, "oops").unwrap(),
                _ => drop(rmp::encode::write_sint(&mut id, i as i64).unwrap()),
            }
            let mut x = Vec::new();
            if i < 250 {
                rmp::encode::write_sint(&mut x, i as i64).unwrap();
            } else {
                rmp::encode::write_f64(&mut x, i as f64 + 0.5).unwrap();
            }
            let v: Vec<f32> = vec![i as f32; if i < 200 { 2 } else { 3 }];
            data.extend(map(&[
                ("id", id),
                ("x", x),
                ("v", nd_f4(&v)),
                ("tag", s(&format!("t{i}"))),
            ]));
        }
        data
    };
    let b = eager_or_after;
    let data = rows(None);
    for projection in [None, Some(vec!["v".to_string(), "x".to_string()])] {
        for eager in [true, false] {
            let r = b(eager)
                .with_projection(projection.clone())
                .build_from_slice(&data)
                .unwrap();
            let schema = r.schema();
            let t = arrow_select::concat::concat_batches(
                &schema,
                &r.map(|b| b.unwrap()).collect::<Vec<_>>(),
            )
            .unwrap();
            let how = format!("eager {eager}, projection {projection:?}");
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            match &projection {
                None => assert_eq!(names, ["id", "x", "v", "tag"], "{how}"),
                Some(p) => assert_eq!(names, *p, "{how}"),
            }
            let x = t.column_by_name("x").unwrap();
            let x = x.as_primitive::<arrow_array::types::Float64Type>();
            let v = t.column_by_name("v").unwrap().as_list::<i32>();
            for i in 0..n {
                let want = if i < 250 { i as f64 } else { i as f64 + 0.5 };
                assert_eq!(x.value(i), want, "{how}: x row {i}");
                let vi = v.value(i);
                let vi = vi.as_primitive::<Float32Type>();
                assert_eq!(
                    vi.values().to_vec(),
                    vec![i as f32; if i < 200 { 2 } else { 3 }]
                );
            }
        }
    }
    // a type conflict in the fifth batch: the same error, at the same record, either way
    let bad = rows(Some(270));
    let err = |eager: bool| {
        b(eager)
            .build_from_slice(&bad)
            .and_then(|r| r.collect::<Result<Vec<_>>>())
            .unwrap_err()
            .to_string()
    };
    let (e1, e2) = (err(true), err(false));
    assert_eq!(e1, e2);
    assert!(e1.contains("record 270"), "{e1}");
}

/// With overrides or a whole schema given, batches decoded during the walk (with the schema the
/// read ends with) are the batches of a read that decodes after it; a given column whose first
/// ndarray comes late changes its type then, and an error is the same error at the same record.
#[test]
fn eager_reads_with_a_schema_or_overrides_given_equal_reads_after_the_walk() {
    let n = 300usize;
    let rows = |bad: Option<usize>| {
        let mut data = Vec::new();
        for i in 0..n {
            let mut x = Vec::new();
            match bad {
                Some(b) if b == i => rmp::encode::write_str(&mut x, "oops").unwrap(),
                _ if i < 250 => drop(rmp::encode::write_sint(&mut x, i as i64).unwrap()),
                _ => rmp::encode::write_f64(&mut x, i as f64 + 0.5).unwrap(),
            }
            // nil, then (from row 150) an ndarray of two float32s
            let w = if i < 150 {
                vec![0xc0]
            } else {
                let data: Vec<u8> = [i as f32, 1.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect();
                map(&[
                    ("nd", vec![0xc3]),
                    ("type", s("<f4")),
                    ("kind", bin(b"")),
                    ("shape", vec![0x91, 2]),
                    ("data", bin(&data)),
                ])
            };
            let mut id = Vec::new();
            rmp::encode::write_sint(&mut id, i as i64).unwrap();
            data.extend(map(&[
                ("id", id),
                ("x", x),
                ("w", w),
                ("tag", s(&format!("t{i}"))),
            ]));
        }
        data
    };
    let b = eager_or_after;
    let read = |b: ReaderBuilder, data: &[u8]| -> String {
        match b
            .build_from_slice(data)
            .and_then(|r| Ok((r.schema(), r.collect::<Result<Vec<_>>>()?)))
        {
            Ok((schema, batches)) => format!(
                "{schema:?}\n{:?}",
                arrow_select::concat::concat_batches(&schema, &batches).unwrap()
            ),
            Err(e) => format!("error: {e}"),
        }
    };
    let data = rows(None);
    let inferred = b(false).build_from_slice(&data).unwrap().schema();
    let f32s = DataType::List(Arc::new(Field::new("item", DataType::Float32, true)));
    type With = Box<dyn Fn(ReaderBuilder) -> ReaderBuilder>;
    let cases: Vec<(&str, With)> = vec![
        (
            "x given",
            Box::new(|b| {
                b.with_schema_overrides(Some(Arc::new(Schema::new(vec![Field::new(
                    "x",
                    DataType::Float64,
                    true,
                )]))))
            }),
        ),
        (
            "w given",
            Box::new(move |b| {
                b.with_schema_overrides(Some(Arc::new(Schema::new(vec![Field::new(
                    "w",
                    f32s.clone(),
                    true,
                )]))))
            }),
        ),
        (
            "schema given",
            Box::new(move |b| b.with_schema(inferred.clone())),
        ),
    ];
    for (what, with) in &cases {
        let after = read(with(b(false)), &data);
        assert!(!after.starts_with("error"), "{what}: {after}");
        assert_eq!(read(with(b(true)), &data), after, "{what}");
        let bad = rows(Some(270));
        let (e1, e2) = (read(with(b(true)), &bad), read(with(b(false)), &bad));
        assert_eq!(e1, e2, "{what}");
        assert!(e1.contains("record 270"), "{what}: {e1}");
    }
}

/// A read with its schema given, taken batch by batch, is walked on a thread of its own and
/// decoded as the walk goes (`read::piped`): the same batches as a read that walks first, for
/// records and values, every column in another order, `n_rows`, a caller that stops early (and
/// a projection, which walks first); a malformed record or
/// a cut end gives the same error at the same record, after the batches before it.
#[test]
fn piped_reads_equal_reads_that_walk_first() {
    let n = 1000usize;
    let records = |bad: Option<usize>, cut: usize| {
        let mut data = Vec::new();
        for i in 0..n {
            let mut id = Vec::new();
            rmp::encode::write_sint(&mut id, i as i64).unwrap();
            let v: Vec<u8> = (0..8)
                .flat_map(|k| ((i * 8 + k) as f32).to_le_bytes())
                .collect();
            let nd = map(&[
                ("nd", vec![0xc3]),
                ("type", s("<f4")),
                ("kind", bin(b"")),
                ("shape", vec![0x91, 8]),
                ("data", bin(&v)),
            ]);
            if bad == Some(i) {
                data.push(0xc1); // a reserved byte where the record should start
            }
            data.extend(map(&[("id", id), ("v", nd), ("t", s(&format!("t{i}")))]));
        }
        data.truncate(data.len() - cut);
        data
    };
    let values: Vec<u8> = (0..5000)
        .flat_map(|i| {
            let mut o = Vec::new();
            rmp::encode::write_f64(&mut o, i as f64 / 7.0).unwrap();
            o
        })
        .collect();
    let good = records(None, 0);
    let schema_of = |data: &[u8]| {
        ReaderBuilder::new()
            .build_from_slice(data)
            .unwrap()
            .schema()
    };
    let (rec_schema, val_schema) = (schema_of(&good), schema_of(&values));
    // two threads: piped; one: the walk first, then the decode
    let read = |data: &[u8],
                schema: &SchemaRef,
                threads: usize,
                f: &dyn Fn(ReaderBuilder) -> ReaderBuilder| {
        let b = f(ReaderBuilder::new()
            .with_schema(schema.clone())
            .with_batch_size(64)
            .with_ahead_min_bytes(0)
            .with_threads(Some(threads)));
        match b.build_from_slice(data) {
            Err(e) => format!("build error: {e}"),
            Ok(r) => {
                let out = r.schema();
                let mut got = Vec::new();
                for x in r {
                    match x {
                        Ok(x) => got.push(x),
                        Err(e) => {
                            return format!(
                                "{} rows, then {e}",
                                got.iter().map(|x| x.num_rows()).sum::<usize>()
                            )
                        }
                    }
                }
                format!(
                    "{out:?}\n{:?}",
                    arrow_select::concat::concat_batches(&out, &got).unwrap()
                )
            }
        }
    };
    type With = Box<dyn Fn(ReaderBuilder) -> ReaderBuilder>;
    let cases: Vec<(&str, &[u8], &SchemaRef, With)> = vec![
        ("records", &good, &rec_schema, Box::new(|b| b)),
        (
            "projection",
            &good,
            &rec_schema,
            Box::new(|b| b.with_projection(Some(vec!["t".into(), "id".into()]))),
        ),
        (
            "every column, in another order",
            &good,
            &rec_schema,
            Box::new(|b| b.with_projection(Some(vec!["t".into(), "v".into(), "id".into()]))),
        ),
        (
            "n_rows",
            &good,
            &rec_schema,
            Box::new(|b| b.with_n_rows(Some(300))),
        ),
        ("values", &values, &val_schema, Box::new(|b| b)),
    ];
    for (what, data, schema, f) in &cases {
        let first = read(data, schema, 1, f);
        assert!(
            !first.contains("error") && !first.contains("then"),
            "{what}: {first}"
        );
        assert_eq!(read(data, schema, 2, f), first, "{what}");
    }
    // errors: the walk first fails the build; piped, the batches before the record come first
    for (what, data) in [
        ("malformed record 700", records(Some(700), 0)),
        ("cut end", records(None, 5)),
    ] {
        let (one, two) = (
            read(&data, &rec_schema, 1, &|b| b),
            read(&data, &rec_schema, 2, &|b| b),
        );
        let msg = |s: &str| {
            s.split_once("error: ")
                .or_else(|| s.split_once(", then "))
                .map(|(_, e)| e.to_string())
                .unwrap()
        };
        assert_eq!(msg(&one), msg(&two), "{what}: {one} / {two}");
        assert!(two.contains("rows, then"), "{what}: {two}");
    }
    // a caller that stops after two batches: the walk thread ends on its own
    let r = ReaderBuilder::new()
        .with_schema(rec_schema.clone())
        .with_batch_size(64)
        .with_ahead_min_bytes(0)
        .with_threads(Some(2))
        .build_from_slice(&good)
        .unwrap();
    let two: Vec<_> = r.take(2).map(|b| b.unwrap().num_rows()).collect();
    assert_eq!(two, [64, 64]);
}

/// Piped readers built on a plain thread and then iterated inside parallel jobs (every worker
/// of the pool waiting for batches the pool decodes) finish: a waiting worker runs the pool's
/// other jobs.
#[test]
fn piped_reads_iterated_on_the_thread_pool_finish() {
    use rayon::prelude::*;
    let mut data = Vec::new();
    for i in 0..2000i64 {
        let mut v = Vec::new();
        rmp::encode::write_sint(&mut v, i).unwrap();
        data.extend(map(&[("id", v), ("t", s(&"x".repeat(100)))]));
    }
    let schema = ReaderBuilder::new()
        .build_from_slice(&data)
        .unwrap()
        .schema();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let readers: Vec<std::sync::Mutex<Option<Reader>>> = (0..8)
            .map(|_| {
                let r = ReaderBuilder::new()
                    .with_schema(schema.clone())
                    .with_batch_size(16)
                    .with_ahead_min_bytes(0)
                    .with_threads(Some(2))
                    .build_from_slice(&data)
                    .unwrap();
                std::sync::Mutex::new(Some(r))
            })
            .collect();
        let rows: Vec<usize> = readers
            .par_iter()
            .map(|r| {
                let r = r.lock().unwrap().take().unwrap();
                r.map(|b| b.unwrap().num_rows()).sum()
            })
            .collect();
        let _ = tx.send(rows);
    });
    let rows = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("readers iterated on the pool finished");
    assert_eq!(rows, vec![2000; 8]);
}

/// An input of one batch is not decoded during the walk: nothing is left to overlap its decode
/// with at the walk's end, and a wide table's schema and decoders were made twice (a state dict
/// of 4,000 tensors read in 17 ms where a read after the walk took 9.7). Its read is the read
/// after the walk; an input of several batches still has every batch decoded during the walk.
#[test]
fn an_input_of_one_batch_is_decoded_once() {
    let rows = |n: usize| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let mut v = Vec::new();
                rmp::encode::write_sint(&mut v, i as i64).unwrap();
                map(&[("id", v), ("tag", s(&format!("t{i}")))])
            })
            .collect()
    };
    let plan_ahead = |data: &[u8]| {
        let b = eager_or_after(true);
        let (plan, ahead) =
            crate::read::ahead::plan_ahead(&b, &Buffer::from(data.to_vec())).unwrap();
        let decoded = ahead.iter().filter(|s| s.lock().unwrap().is_some()).count();
        (plan.batch_starts.len(), decoded)
    };
    let one = rows(40);
    assert_eq!(plan_ahead(&one), (1, 0));
    let read = |eager: bool| {
        eager_or_after(eager)
            .build_from_slice(&one)
            .unwrap()
            .collect::<Result<Vec<_>>>()
            .unwrap()
    };
    assert_eq!(read(true), read(false));
    assert_eq!(read(true)[0].num_rows(), 40);
    let several = rows(200);
    assert_eq!(plan_ahead(&several), (4, 4));
}
