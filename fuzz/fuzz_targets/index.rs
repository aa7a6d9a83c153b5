//! Arbitrary bytes → the reader's record-index path (a file with an index beside it, read from row k).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    msgpack_arrow_fuzz::checks::index(data);
});
