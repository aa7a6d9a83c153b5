//! The schema walk cut into pieces (src/read/split.rs) against a walk in one, on the cases of
//! the inference tests.

use super::*;

/// The schema walk cut into pieces on several threads (src/read/split.rs) gives what a walk on one
/// thread gives: schema, batches and errors. Each case is walked as a stream and as a top-level
/// array, alone, three times over, and with payloads holding the bytes rows start with (wrong
/// guesses of where a piece starts).
pub(super) fn walking_in_pieces_equals_walking_whole(cases: &[(Layout, Vec<Vec<u8>>)]) {
    let run = |layout: Layout, data: &[u8], pieces: usize, max_columns: usize, binary: bool| {
        let b = ReaderBuilder::new()
            .with_layout(layout)
            .with_conflicts(if binary {
                Conflicts::Binary
            } else {
                Conflicts::Error
            })
            .with_batch_size(2)
            .with_max_columns(max_columns)
            .with_threads(Some(pieces))
            .with_walk_piece_bytes(if pieces > 1 { 1 } else { usize::MAX });
        match b.build_from_slice(data).and_then(|r| {
            let schema = r.schema();
            Ok((schema, r.collect_batches()?))
        }) {
            Ok((schema, batches)) => format!("{schema:?}\n{batches:?}"),
            Err(e) => format!("error: {e} at {:?} record {:?}", e.offset(), e.record()),
        }
    };
    let mut n = 0;
    for (i, (layout, rows)) in cases.iter().enumerate() {
        // a row whose payload holds the first row's first bytes, so that pieces start inside it
        let sync: Vec<u8> = rows[0].iter().take(6).copied().collect();
        let decoy = map(&[("a", bin(&[sync.clone(), sync.clone(), sync].concat()))]);
        let thrice: Vec<Vec<u8>> = [rows.clone(), rows.clone(), rows.clone()].concat();
        let mut with_decoys = Vec::new();
        for r in rows {
            with_decoys.push(decoy.clone());
            with_decoys.push(r.clone());
        }
        for rows in [rows, &thrice, &with_decoys] {
            let stream = rows.concat();
            let mut array = Vec::new();
            rmp::encode::write_array_len(&mut array, rows.len() as u32).unwrap();
            array.extend(rows.concat());
            for data in [&stream, &array] {
                for (max_columns, binary) in [
                    (DEFAULT_MAX_COLUMNS, false),
                    (1, false),
                    (DEFAULT_MAX_COLUMNS, true),
                ] {
                    let whole = run(*layout, data, 1, max_columns, binary);
                    for pieces in [2, 3, 5, 8] {
                        assert_eq!(
                            run(*layout, data, pieces, max_columns, binary),
                            whole,
                            "case {i}, {pieces} pieces, max_columns {max_columns}, binary {binary}"
                        );
                        n += 1;
                    }
                }
            }
        }
    }
    assert!(n > 1000, "{n}");
}
