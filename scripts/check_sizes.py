#!/usr/bin/env python3
"""Size habits of STYLE.md #17, checked in CI (scripts/check-style.sh).

- No function over 80 lines in src/engine, src/api, src/drivers (tests excepted).
- No file over 800 lines in src/ (tests included; generated files are not in src/).

A function is a definition that starts at column 0 (namespaces are not indented, as in the
Google style) and ends at the next line that is exactly "}" ; its length counts the lines
from the signature's first line to that brace. Prints each offence; exits 1 when any.
"""
import pathlib
import re
import sys

FUNCTION_DIRS = ("src/engine", "src/api", "src/drivers")
MAX_FUNCTION = 80
MAX_FILE = 800
NOT_A_FUNCTION = re.compile(r"^(namespace|class|struct|enum|union|extern|#|//|static_assert|template\s*<[^>]*>\s*$)")


def functions(lines):
    """Yields (name, first line number, length) of each column-0 function definition."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line[:1].strip() or NOT_A_FUNCTION.match(line) or line.rstrip() == "}":
            i += 1
            continue
        # A declaration or definition starting here: read up to its '{' or ';'.
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";", "}")) and lines[j].strip():
            j += 1
        head = " ".join(lines[i:j + 1])
        is_function = (j < len(lines) and lines[j].rstrip().endswith("{") and "(" in head
                       and "=" not in head.split("(")[0])
        if not is_function:
            i = j + 1
            continue
        k = j + 1
        while k < len(lines) and lines[k].rstrip() != "}":
            k += 1
        name = re.search(r"([\w:~]+)\s*\(", head)
        yield (name.group(1) if name else "?", i + 1, k - i + 1)
        i = k + 1


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    bad = []
    for path in sorted(root.glob("src/**/*")):
        if path.suffix not in (".cc", ".h") or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MAX_FILE:
            bad.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE})")
        if rel.startswith(FUNCTION_DIRS) and not rel.endswith("_test.cc"):
            for name, line, length in functions(lines):
                if length > MAX_FUNCTION:
                    bad.append(f"{rel}:{line}: {name} is {length} lines (at most {MAX_FUNCTION})")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
