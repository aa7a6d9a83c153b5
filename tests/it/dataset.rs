//! `convert --dataset`: a directory of dumps into one output per input (in parallel), resumable,
//! optionally hive-partitioned — checked by reading the dataset back with pyarrow.

use std::process::Command;

use crate::common::*;
use crate::python::python;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_msgpack-arrow"))
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn directory_to_parquet_dataset_is_resumable_and_partitioned() {
    let src = golden_dir().join("good");
    let inputs: Vec<_> = ["rec_embedding_100", "rec_native", "rec_lists"]
        .iter()
        .map(|n| src.join(format!("{n}.msgpack")))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ds");
    let run = |extra: &[&str]| {
        let o = cli()
            .arg("convert")
            .args(&inputs)
            .arg("-o")
            .arg(&out)
            .arg("--dataset")
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let first = run(&[]);
    assert!(first.contains("converted 3 input(s), skipped 0"), "{first}");
    let mtime = std::fs::metadata(out.join("rec_native.parquet"))
        .unwrap()
        .modified()
        .unwrap();
    // a re-run skips complete outputs; a missing one is redone
    std::fs::remove_file(out.join("rec_lists.parquet")).unwrap();
    let second = run(&[]);
    assert!(
        second.contains("converted 1 input(s), skipped 2"),
        "{second}"
    );
    assert_eq!(
        std::fs::metadata(out.join("rec_native.parquet"))
            .unwrap()
            .modified()
            .unwrap(),
        mtime
    );
    // pyarrow reads each output as the msgpack file reads
    let check = "import pyarrow.parquet as pq, sys\nt = pq.read_table(sys.argv[1])\nassert t.num_rows == 100, t.num_rows\nassert str(t.schema.field('emb').type) == 'fixed_size_list<item: float>[16]', t.schema\n";
    let o = Command::new(python())
        .arg("-c")
        .arg(check)
        .arg(out.join("rec_embedding_100.parquet"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // hive partitions by a column, read back as a dataset by pyarrow
    let hive = dir.path().join("hive");
    let o = cli()
        .args([
            "convert",
            inputs[0].to_str().unwrap(),
            "-o",
            hive.to_str().unwrap(),
            "--dataset",
            "--partition-by",
            "label",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let parts = std::fs::read_dir(&hive)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("label=")
        })
        .count();
    assert!(parts > 1, "{parts} partitions");
    let check = "import pyarrow.dataset as ds, sys\nt = ds.dataset(sys.argv[1], format='parquet', partitioning='hive').to_table()\nassert t.num_rows == 100, t.num_rows\nassert 'label' in t.schema.names\n";
    let o = Command::new(python())
        .arg("-c")
        .arg(check)
        .arg(&hive)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
#[cfg_attr(
    not(feature = "python-tests"),
    ignore = "needs Python and the golden corpus it generates: `make test` runs it"
)]
fn partition_values_that_differ_only_in_unsafe_characters_stay_apart() {
    // values a path cannot hold as they are: before they were escaped, `a/b` and `a_b` shared
    // one directory (and read back as one value); pyarrow and Polars must give each back
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.msgpack");
    let out = dir.path().join("hive");
    let make = r#"
import msgpack, sys
labels = ["a/b", "a_b", "a\\b", "50%", "50%25", ".", "..", "x=y", "t 10:00", "é ü", None]
with open(sys.argv[1], "wb") as f:
    for i, l in enumerate(labels * 3):
        f.write(msgpack.packb({"id": i, "label": l}))
"#;
    let o = Command::new(python())
        .args(["-c", make])
        .arg(&input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = cli()
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .args(["--dataset", "--partition-by", "label", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let check = r#"
import msgpack, sys, pyarrow.dataset as ds, polars as pl
want = sorted((r["id"], r["label"]) for r in msgpack.Unpacker(open(sys.argv[1], "rb")))
t = ds.dataset(sys.argv[2], format="parquet", partitioning="hive").to_table()
got = sorted(zip(t["id"].to_pylist(), t["label"].to_pylist()))
assert got == want, (got, want)
df = pl.scan_parquet(sys.argv[2], hive_partitioning=True).collect()
got = sorted(zip(df["id"].to_list(), df["label"].to_list()))
assert got == want, (got, want)
"#;
    let o = Command::new(python())
        .args(["-c", check])
        .arg(&input)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
