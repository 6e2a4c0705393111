#!/usr/bin/env bash
# Applies .clang-format to every tracked C and C++ file (`make format`), or with --check
# lists the files that differ and fails (`make format-check`, part of scripts/test.sh).
# Generated protobuf code and vendored files (third_party/) are not ours to format.
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$CLANG_FORMAT" ]; then
  echo "format: clang-format not found (apt-get install clang-format-14)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' | grep -v '^third_party/')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! "$CLANG_FORMAT" "$f" | cmp -s - "$f"; then
      echo "format: $f differs from .clang-format (run make format)" >&2
      bad=1
    fi
  done
  exit $bad
fi
"$CLANG_FORMAT" -i "${files[@]}"
