//! SPEC §6: malformed and hostile input gives errors with positions — never a panic, a hang or an
//! allocation sized by an untrusted length.

use msgpack_arrow::{ErrorKind, ReaderBuilder};

use crate::common::*;

fn read_all(bytes: &[u8], layout: &str) -> msgpack_arrow::Result<usize> {
    let r = ReaderBuilder::new()
        .with_layout(layout.parse().unwrap())
        .with_batch_size(5)
        .build_from_slice(bytes)?;
    let mut rows = 0;
    for b in r {
        rows += b?.num_rows();
    }
    Ok(rows)
}

#[test]
fn truncation_at_every_offset_is_an_error_naming_where_the_input_ends() {
    let mut cuts = 0;
    let mut failures = Vec::new();
    for case in manifest()["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let layout = case["layout"].as_str().unwrap();
        let data =
            std::fs::read(golden_dir().join("good").join(format!("{name}.msgpack"))).unwrap();
        if data.len() > 8_000 {
            continue;
        }
        for cut in 0..data.len() {
            cuts += 1;
            let r = std::panic::catch_unwind(|| read_all(&data[..cut], layout));
            match r {
                Err(_) => failures.push(format!("{name}: panic at cut {cut}")),
                // a cut between two objects of a stream is a shorter valid file
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    if let ErrorKind::Truncated { have, .. } = e.kind() {
                        if e.offset().map(|o| o + have) != Some(cut as u64) {
                            failures.push(format!("{name}: cut {cut}: {e}"));
                        }
                    }
                }
            }
        }
    }
    assert!(cuts > 10_000, "{cuts}");
    assert!(
        failures.is_empty(),
        "{} of {cuts} cuts wrong:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_byte_flipped_never_panics() {
    let mut runs = 0;
    for case in manifest()["good"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let layout = case["layout"].as_str().unwrap();
        let data =
            std::fs::read(golden_dir().join("good").join(format!("{name}.msgpack"))).unwrap();
        if data.len() > 4_000 {
            continue;
        }
        for i in 0..data.len() {
            for v in [0x00u8, 0xc1, 0xdd, data[i] ^ 0x01] {
                let mut d = data.clone();
                d[i] = v;
                runs += 1;
                let r = std::panic::catch_unwind(|| read_all(&d, layout));
                assert!(r.is_ok(), "{name}: panic with byte {i} set to {v:#x}");
            }
        }
    }
    assert!(runs > 10_000, "{runs}");
}

#[test]
fn deep_nesting_is_bounded_and_configurable() {
    let mut d = vec![0x91u8; 100_000];
    d.push(0xc0);
    let e = read_all(&d, "auto").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TooDeep(128)), "{e}");
    let e = ReaderBuilder::new()
        .with_max_depth(10)
        .build_from_slice(&d)
        .err()
        .unwrap();
    assert!(
        e.to_string().starts_with("nesting deeper than 10 levels"),
        "{e}"
    );
    // maps too
    let mut m = Vec::new();
    for _ in 0..50_000 {
        m.extend_from_slice(&[0x81, 0xa1, b'k']);
    }
    m.push(0x01);
    assert!(matches!(
        read_all(&m, "auto").unwrap_err().kind(),
        ErrorKind::TooDeep(_)
    ));
}

#[test]
fn huge_declared_lengths_allocate_nothing() {
    // array32 of 4 billion, map32, bin32 of 4 GiB, an ndarray claiming 2^40 elements
    for d in [
        &[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01][..],
        &[0xdf, 0xff, 0xff, 0xff, 0xff, 0x01],
        &[0xc6, 0xff, 0xff, 0xff, 0xff, 0x01],
        &[0x81, 0xa1, b'a', 0xc6, 0xff, 0xff, 0xff, 0xff],
    ] {
        let e = read_all(d, "auto").unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Truncated { .. }), "{e}");
    }
}

#[test]
fn decoded_bytes_cap_stops_the_read() {
    let path = golden_dir().join("good/rec_embedding_100.msgpack");
    let all: usize = ReaderBuilder::new()
        .build_from_path(&path)
        .unwrap()
        .map(|b| b.unwrap().get_array_memory_size())
        .sum();
    let r = ReaderBuilder::new()
        .with_batch_size(10)
        .with_max_decoded_bytes(Some(all as u64 / 3))
        .build_from_path(&path)
        .unwrap();
    let results: Vec<_> = r.collect();
    let e = results.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LimitExceeded(_)), "{e}");
    assert!(results.len() < 10, "stopped early: {}", results.len());
    // under the cap: no error
    let ok = ReaderBuilder::new()
        .with_max_decoded_bytes(Some(all as u64 * 2))
        .build_from_path(&path)
        .unwrap();
    assert!(ok.collect::<msgpack_arrow::Result<Vec<_>>>().is_ok());
}
