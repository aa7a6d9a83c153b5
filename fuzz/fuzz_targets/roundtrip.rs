//! Whatever decodes is written back in the same layout and must read back as the same table.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    use msgpack_arrow_fuzz::checks::{LAYOUTS, roundtrip_in, one_layout};
    roundtrip_in(data, one_layout(data, &LAYOUTS));
});
