//! Whatever decodes is written back in the same layout and must read back as the same table.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    msgpack_arrow_fuzz::checks::roundtrip(data);
});
