//! `np.save` bytes in ext values through the fast path of inference.

use super::inference::fast_or_full;
use super::*;

/// `np.save` bytes in ext values (`npy_ext`) take the fast path once their header is known: rows
/// of the same header, then another shape, dtype, a Fortran-ordered array and a header whose
/// data is short read as full inference reads them (values or the same error).
#[test]
fn npy_ext_rows_read_as_full_inference_does() {
    fn npy(descr: &str, shape: &str, fortran: bool, data: &[u8]) -> Vec<u8> {
        let mut h = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut payload = b"\x93NUMPY\x01\x00".to_vec();
        payload.extend((h.len() as u16).to_le_bytes());
        payload.extend(h.as_bytes());
        payload.extend(data);
        let mut o = Vec::new();
        rmp::encode::write_ext_meta(&mut o, payload.len() as u32, 7).unwrap();
        o.extend(payload);
        o
    }
    let f4 = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let row = |v: Vec<u8>| [vec![0x81], s("v"), v].concat();
    let same: Vec<Vec<u8>> = (0..6)
        .map(|i| row(npy("<f4", "(2,)", false, &f4(&[i as f32, 1.0]))))
        .collect();
    let tails = [
        row(npy("<f4", "(3,)", false, &f4(&[1.0, 2.0, 3.0]))),
        row(npy("<i4", "(2,)", false, &[1, 0, 0, 0, 2, 0, 0, 0])),
        row(npy("<f4", "(2, 1)", true, &f4(&[5.0, 6.0]))),
        row(npy("<f4", "(2,)", false, &f4(&[1.0]))),
    ];
    for tail in tails {
        let data = [same.concat(), tail, same.concat()].concat();
        let b = ReaderBuilder::new().with_npy_ext(Some(7));
        let full = fast_or_full(&b, &data, false, false);
        assert_eq!(fast_or_full(&b, &data, true, false), full);
        assert_eq!(fast_or_full(&b, &data, true, true), full);
    }
}
