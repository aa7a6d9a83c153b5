//! What coverage-guided fuzzing (`fuzz/`, cargo-fuzz) found, kept as tests: every crashing input
//! under `tests/data/fuzz/`, and the committed minimised corpus `fuzz/corpus/<target>/`, run
//! through the fuzz targets' own checks (`fuzz/src/checks.rs`, included here by path). The corpus
//! replay is the short fuzz run CI does: each of its inputs once, no mutation.

use std::path::{Path, PathBuf};

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

#[test]
fn crashing_inputs_found_by_fuzzing() {
    let crashers = files(&root().join("tests/data/fuzz"));
    let mut failures = replay(&crashers, checks::decode);
    failures.extend(replay(&crashers, checks::roundtrip));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn fuzz_corpus_replays_cleanly() {
    let mut n = 0;
    let mut failures = Vec::new();
    for (target, check) in [
        ("decode", checks::decode as fn(&[u8])),
        ("roundtrip", checks::roundtrip),
    ] {
        let corpus = files(&root().join("fuzz/corpus").join(target));
        n += corpus.len();
        failures.extend(replay(&corpus, check));
    }
    assert!(n > 0, "no fuzz corpus under fuzz/corpus/");
    assert!(
        failures.is_empty(),
        "{} of {n} corpus inputs fail:\n{}",
        failures.len(),
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
