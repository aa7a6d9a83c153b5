//! SPEC §4.4: Python's msgpack_numpy reads what we write (checked by tests/data/compare_python.py,
//! run with the project venv's Python: `$MSGPACK_ARROW_PYTHON`, set by `make test`).

use std::process::Command;

use msgpack_arrow::{Layout, ReaderBuilder, WriterBuilder};

use crate::common::*;

pub fn python() -> String {
    std::env::var("MSGPACK_ARROW_PYTHON").expect(
        "MSGPACK_ARROW_PYTHON is not set: run the tests with `make test`, which sets up the venv",
    )
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn python_msgpack_numpy_reads_what_we_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = Vec::new();
    for case in manifest()["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        // legacy files need raw=True in Python
        if name.starts_with("legacy") {
            continue;
        }
        let orig = golden_dir().join("good").join(format!("{name}.msgpack"));
        let r = ReaderBuilder::new()
            .with_layout(case["layout"].as_str().unwrap().parse().unwrap())
            .build_from_path(&orig)
            .unwrap();
        let (schema, layout) = (r.schema(), r.layout());
        let batches = r.collect_batches().unwrap();
        // plain, and aligned (wider encodings Python must still accept)
        for aligned in [false, true] {
            let builder = WriterBuilder::new()
                .with_layout(layout)
                .with_aligned(aligned);
            let mut w = builder.clone().build(Vec::new(), schema.clone()).unwrap();
            let mut count = builder.build_count(schema.clone()).unwrap();
            for b in &batches {
                w.write(b).unwrap();
                count.write(b).unwrap();
            }
            let bytes = w.finish().unwrap();
            // the writer that only counts comes to the same size
            assert_eq!(count.finish_count().unwrap(), bytes.len() as u64, "{name}");
            let ours = dir.path().join(format!("{name}.{aligned}.msgpack"));
            std::fs::write(&ours, bytes).unwrap();
            args.push(orig.clone());
            args.push(ours);
        }
    }
    assert!(args.len() > 100, "{}", args.len());
    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/compare_python.py"
        ))
        .args(&args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Python read our files differently:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = Layout::Records;
}
