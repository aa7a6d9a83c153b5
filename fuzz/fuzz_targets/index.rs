//! Arbitrary bytes → the reader's record-index path (a file with an index beside it, read from row k).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use msgpack_arrow_fuzz::checks::{INDEX_LAYOUTS, index_in, one_layout};
    index_in(data, one_layout(data, &INDEX_LAYOUTS));
});
