#!/usr/bin/env bash
# Seed fuzz/corpus/<target>/ with the golden files listed in fuzz/seeds.txt:
#   fuzz/seed.sh [GOLDEN_DIR]    (default: $MSGPACK_ARROW_GOLDEN, else tests/data/golden)
# The golden corpus comes from tests/data/generate.py (`make golden`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
golden="${1:-${MSGPACK_ARROW_GOLDEN:-$here/../tests/data/golden}}"
[ -f "$golden/manifest.json" ] || { echo "no golden corpus at $golden (run tests/data/generate.py DIR)" >&2; exit 1; }
for t in decode roundtrip salvage index; do
    mkdir -p "$here/corpus/$t"
    grep -v '^#' "$here/seeds.txt" | while read -r f; do
        [ -n "$f" ] && cp "$golden/$f" "$here/corpus/$t/"
    done
done
echo "seeded $(grep -vc '^#' "$here/seeds.txt") files per target"
