//! Arbitrary bytes → the reader's salvage path (`on_truncated=keep` on the input cut short).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use msgpack_arrow_fuzz::checks::{LAYOUTS, salvage_in, one_layout};
    salvage_in(data, one_layout(data, &LAYOUTS));
});
