//! What coverage-guided fuzzing (`fuzz/`, cargo-fuzz) found, kept as tests: every input under
//! `tests/data/fuzz/` that made a target fail, and the seeds (`fuzz/seeds.txt`), run through the
//! fuzz targets' own checks (`fuzz/src/checks.rs`, included here by path). The seed replay is the
//! short fuzz run CI does: each input once, no mutation.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::Array;

#[allow(dead_code)]
#[path = "../../fuzz/src/checks.rs"]
mod checks;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => d
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Run `check` on each file; collect the ones that panic (with the panic message).
fn replay(paths: &[PathBuf], check: fn(&[u8])) -> Vec<String> {
    let mut failures = Vec::new();
    for p in paths {
        let data = std::fs::read(p).unwrap();
        if let Err(e) = std::panic::catch_unwind(|| check(&data)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{}: {msg}", p.display()));
        }
    }
    failures
}

/// The fuzz targets, as named under `fuzz/fuzz_targets/` and `fuzz/corpus/`.
const TARGETS: [&str; 4] = ["decode", "roundtrip", "salvage", "index"];

/// Every input through every target's check.
fn replay_all(inputs: &[PathBuf]) -> Vec<String> {
    let mut failures = replay(inputs, checks::decode);
    failures.extend(replay(inputs, checks::roundtrip));
    failures.extend(replay(inputs, checks::salvage));
    failures.extend(replay(inputs, checks::index));
    checks::remove_scratch();
    failures
}

#[test]
fn crashing_inputs_found_by_fuzzing() {
    let crashers = files(&root().join("tests/data/fuzz"));
    let failures = replay_all(&crashers);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The seeds (`fuzz/seeds.txt`: the golden files) through both targets' checks: the short fuzz
/// run CI does. `MSGPACK_ARROW_FUZZ_CORPUS=fuzz/corpus` adds a local corpus (every file under it;
/// minutes in a debug build for the full minimised one, so not by default).
#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn fuzz_seeds_replay_cleanly() {
    let list = std::fs::read_to_string(root().join("fuzz/seeds.txt")).unwrap();
    let golden = crate::common::golden_dir();
    let mut inputs: Vec<PathBuf> = list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| golden.join(l))
        .collect();
    assert!(inputs.len() > 50, "{} seeds", inputs.len());
    if let Some(dir) = std::env::var_os("MSGPACK_ARROW_FUZZ_CORPUS") {
        let dir = PathBuf::from(dir);
        inputs.extend(files(&dir));
        for sub in TARGETS {
            inputs.extend(files(&dir.join(sub)));
        }
    }
    let failures = replay_all(&inputs);
    assert!(
        failures.is_empty(),
        "{} of {} inputs fail:\n{}",
        failures.len(),
        inputs.len(),
        failures.join("\n")
    );
}

/// Found by replaying the corpus through `build(Read)` with a source that hands out 7 bytes per
/// read: each read zero-filled a fresh 1 MiB (and a debug build took minutes for 86 small files).
/// The reader now asks for about what the source gave last time.
#[test]
fn short_reads_do_not_ask_for_a_megabyte_each() {
    use std::io::Read;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counting {
        inner: checks::Trickle,
        calls: Arc<AtomicUsize>,
        asked: Arc<AtomicUsize>,
    }
    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.asked.fetch_add(buf.len(), Ordering::Relaxed);
            self.inner.read(buf)
        }
    }
    // a stream of 5,000 records {"i": n}
    let mut data = Vec::new();
    for i in 0..5000u16 {
        data.extend_from_slice(&[0x81, 0xa1, b'i', 0xcd]);
        data.extend_from_slice(&i.to_be_bytes());
    }
    let (calls, asked) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let src = Counting {
        inner: checks::Trickle::new(&data),
        calls: calls.clone(),
        asked: asked.clone(),
    };
    let rows: usize = msgpack_arrow::ReaderBuilder::new()
        .with_batch_size(1000)
        .build(src)
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 5000);
    let (calls, asked) = (calls.load(Ordering::Relaxed), asked.load(Ordering::Relaxed));
    assert!(calls > data.len() / 7, "{calls} reads");
    assert!(
        asked / calls <= 16 << 10,
        "{} bytes asked per read on average",
        asked / calls
    );
}

/// Found by the `roundtrip` target: two records whose keys together are an ndarray's key set
/// (`{nd, type, kind, shape, dada}` and `{nd, "", kind, shape, data}`) read as maps; written back,
/// every row has every key, the missing ones nil, and the first row became `{nd: True, type:
/// ">i2", shape: [2], data: nil, ...}`, which re-read as an ndarray with bad data. A nil value now
/// counts as a missing key when deciding whether a map is an ndarray.
#[test]
fn nil_valued_ndarray_keys_make_a_plain_map() {
    // {"nd": True, "type": "<f4", "shape": nil, "data": nil}
    let rec = b"\x84\xa2nd\xc3\xa4type\xa3<f4\xa5shape\xc0\xa4data\xc0";
    let r = msgpack_arrow::ReaderBuilder::new()
        .build_from_slice(rec)
        .unwrap();
    assert_eq!(r.layout(), msgpack_arrow::Layout::Records);
    let names: Vec<String> = r
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["nd", "type", "shape", "data"]);
    let b = r.collect_batches().unwrap();
    assert_eq!(b[0].num_rows(), 1);
    assert_eq!(b[0].column(3).logical_null_count(), 1);
    checks::roundtrip(rec);
}

/// A ragged tensor column (shapes differ between rows) through `build(Read)`: found by replaying
/// the `roundtrip` corpus through the `decode` checks. A row whose ndarray header repeats the
/// previous row's takes a fast path that copied the previous row's shape from the decoder's shape
/// list — empty at the start of a batch (a subtraction overflow: a panic), and zeros after a null
/// row (a wrong shape). The fast path now keeps the shape its header stands for.
#[test]
fn ragged_tensor_rows_repeating_a_header_keep_their_shape() {
    fn nd(n: usize) -> Vec<u8> {
        // {"x": <f4 ndarray of n elements, all n as f32}
        let mut v = b"\x81\xa1x\x85\xc4\x02nd\xc3\xc4\x04type\xa3<f4\xc4\x04kind\xc4\x00".to_vec();
        v.extend_from_slice(b"\xc4\x05shape\x91");
        v.push(n as u8);
        v.extend_from_slice(b"\xc4\x04data\xc4");
        v.push(4 * n as u8);
        for _ in 0..n {
            v.extend_from_slice(&(n as f32).to_le_bytes());
        }
        v
    }
    let null = b"\x81\xa1x\xc0".to_vec();
    // shapes 3, 2, nil, 2, 2: rows 3 and 4 repeat row 1's header
    let data = [nd(3), nd(2), null, nd(2), nd(2)].concat();
    let want: Vec<Option<Vec<f32>>> = vec![
        Some(vec![3.0; 3]),
        Some(vec![2.0; 2]),
        None,
        Some(vec![2.0; 2]),
        Some(vec![2.0; 2]),
    ];
    for bs in [1, 2, 5] {
        for streamed in [false, true] {
            let b = msgpack_arrow::ReaderBuilder::new().with_batch_size(bs);
            let r = if streamed {
                b.build(checks::Trickle::new(&data))
            } else {
                b.build_from_slice(&data)
            }
            .unwrap();
            let mut got = Vec::new();
            for batch in r {
                let batch = batch.unwrap();
                let l = batch.column(0).as_list::<i32>();
                for i in 0..l.len() {
                    got.push(
                        l.is_valid(i)
                            .then(|| l.value(i).as_primitive::<Float32Type>().values().to_vec()),
                    );
                }
            }
            assert_eq!(got, want, "batch size {bs}, streamed {streamed}");
        }
    }
}
