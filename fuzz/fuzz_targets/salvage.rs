//! Arbitrary bytes → the reader's salvage path (`on_truncated=keep` on the input cut short).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    msgpack_arrow_fuzz::checks::salvage(data);
});
