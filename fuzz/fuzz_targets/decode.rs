//! Arbitrary bytes → the reader, in every layout, from a slice and through `build(Read)`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    msgpack_arrow_fuzz::checks::decode(data);
});
