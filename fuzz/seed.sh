#!/usr/bin/env bash
# Seed fuzz/corpus/<target>/ with the golden corpus (written by the real Python msgpack_numpy):
#   fuzz/seed.sh [GOLDEN_DIR]    (default: $MSGPACK_ARROW_GOLDEN, else tests/data/golden)
# Files over 16 KiB (the 100,000-level nesting cases) are left out: -max_len is 16384.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
golden="${1:-${MSGPACK_ARROW_GOLDEN:-$here/../tests/data/golden}}"
[ -f "$golden/manifest.json" ] || { echo "no golden corpus at $golden (run tests/data/generate.py DIR)" >&2; exit 1; }
for t in decode roundtrip; do
    mkdir -p "$here/corpus/$t"
    find "$golden/good" "$golden/bad" -name '*.msgpack' -size -16k -exec cp {} "$here/corpus/$t/" \;
done
ls "$here/corpus/decode" | wc -l | xargs echo "seeded files per target:"
