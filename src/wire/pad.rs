//! Aligned mode's padding planner: which wider header forms put an ndarray payload on a 64-byte
//! (else 8-byte) boundary.

/// `suf[i]`: bit `k` set when slots `i..` can add exactly `k` bytes (k < 128) by choosing wider
/// forms. A slot is the list of encoded sizes it may take, smallest first.
pub(crate) fn suffix_reach(slots: &[&[u8]], suf: &mut [u128]) {
    let n = slots.len();
    suf[n] = 1;
    for i in (0..n).rev() {
        let f = slots[i];
        let mut r = 0u128;
        for &s in f {
            r |= suf[i + 1] << (s - f[0]) as u32;
        }
        suf[i] = r;
    }
}

/// Choose one size per slot adding exactly `target` bytes (which `suf[0]` must reach); earlier
/// slots take as much as they can, so the slot order is a preference order.
pub(crate) fn pick_sizes(slots: &[&[u8]], suf: &[u128], mut target: usize, sizes: &mut [u8]) {
    for (i, f) in slots.iter().enumerate() {
        sizes[i] = f[0];
        for &s in f.iter().rev() {
            let o = (s - f[0]) as usize;
            if o <= target && (suf[i + 1] >> (target - o)) & 1 == 1 {
                sizes[i] = s;
                target -= o;
                break;
            }
        }
    }
}

/// The alignment aimed at for ndarray payloads, and the fallback that widening can always reach.
pub(crate) const ALIGN: u64 = 64;
const ALIGN_MIN: u64 = 8;

/// The smallest padding in `reach` that puts `pos + padding` on a 64-byte boundary, else on an
/// 8-byte one, else 0.
pub(crate) fn choose_pad(reach: u128, pos: u64) -> usize {
    for a in [ALIGN, ALIGN_MIN] {
        let mut t = ((a - pos % a) % a) as usize;
        while t < 128 {
            if (reach >> t) & 1 == 1 {
                return t;
            }
            t += a as usize;
        }
    }
    0
}
