//! Arbitrary bytes → the reader, in one layout chosen by the length (`one_layout`), from a slice and through `build(Read)`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use msgpack_arrow_fuzz::checks::{LAYOUTS, decode_in, one_layout};
    decode_in(data, one_layout(data, &LAYOUTS));
});
