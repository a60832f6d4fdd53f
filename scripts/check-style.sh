#!/usr/bin/env bash
# The house habits CI enforces (STYLE.md #17): every C++ file as clang-format writes it
# (.clang-format: Google, 100 columns), and the sizes scripts/check_sizes.py checks (no
# function over 80 lines in src/engine, src/api, src/drivers; no file over 800 lines in src/).
# Fix formatting with: git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
files=$(git ls-files '*.cc' '*.h')
if ! clang-format --dry-run --Werror $files 2>build-style.log; then
  echo "check-style: these files are not formatted as .clang-format says:" >&2
  grep -o '^[^:]*\.\(cc\|h\)' build-style.log | sort -u >&2
  status=1
fi
rm -f build-style.log
python3 scripts/check_sizes.py . || status=1
exit $status
