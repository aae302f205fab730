#!/usr/bin/env python3
"""The house's two rules, checked from the sources (docs/ARCHITECTURE.md).

1. Includes point down. The floors, top to bottom:
       tools -> filter -> engine -> kernels -> kernels/common
   A file may include files on its own floor or below, never above. (tests/
   stands beside the house and may include anything.)
2. No non-test source (C, C++, CUDA, Python, shell) is over MAX_LINES lines.

Prints every breach, one per line ("path:line: ..."), and exits 1 when there
is any; prints one summary line and exits 0 otherwise. Run by ctest
("layers"), so CI fails on a breach:

    python3 tools/check/layers.py [--root DIR] [--max-lines N]
"""
import argparse
import os
import re
import sys

MAX_LINES = 500

# (folder prefix, floor), longest prefix first: a higher number is a higher floor.
FLOORS = [
    ("kernels/common/", 1),
    ("kernels/", 2),
    ("engine/", 3),
    ("filter/", 4),
    ("tools/", 5),
]
FLOOR_NAMES = {1: "kernels/common", 2: "kernels", 3: "engine", 4: "filter", 5: "tools"}

# Where the build looks for a quoted include, after the including file's own
# folder (the CMakeLists' include directories): kernels/ (fz_kernels, public),
# engine/include (fz_engine, public), engine/src (the engine's own sources),
# filter/ (fz_filter_core), tools/h5fz (the h5fz tool).
INCLUDE_ROOTS = ["kernels", "engine/include", "engine/src", "filter", "tools/h5fz"]

C_LIKE = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh", ".inc")
SOURCES = C_LIKE + (".py", ".sh")
SKIP_DIRS = {".git", "tests", "build", "node_modules", "__pycache__"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def floor_of(path):
    for prefix, floor in FLOORS:
        if path.startswith(prefix):
            return floor
    return None


def is_test_source(path):
    name = os.path.basename(path)
    return (path.startswith("tests/") or "/testing/" in path or name.startswith("test_")
            or re.search(r"_(test|fuzz)\.(c|cc|cpp|cu)$", name) is not None)


def source_files(root):
    for top in sorted(os.listdir(root)):
        if top in SKIP_DIRS or top.startswith(".") or not os.path.isdir(os.path.join(root, top)):
            continue
        if top.startswith("build"):  # build trees (build/, build-asan/, ...)
            continue
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if name.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")


def resolve(root, including, target):
    """The project file a quoted include names, or None (a system header)."""
    for base in [os.path.dirname(including)] + INCLUDE_ROOTS:
        candidate = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def check(root, max_lines):
    breaches = []
    files = 0
    includes = 0
    for path in source_files(root):
        files += 1
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        if not is_test_source(path) and len(lines) > max_lines:
            breaches.append(f"{path}:{len(lines)}: {len(lines)} lines, over {max_lines}: split it along its seams")
        if not path.endswith(C_LIKE):
            continue
        here = floor_of(path)
        if here is None:
            continue
        for number, line in enumerate(lines, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = resolve(root, path, match.group(1))
            if target is None:
                continue
            includes += 1
            there = floor_of(target)
            if there is not None and there > here:
                breaches.append(f"{path}:{number}: includes {target}, which stands above it "
                                f"({FLOOR_NAMES[here]} -> {FLOOR_NAMES[there]})")
    return breaches, files, includes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                        help="the repository to check (default: this one)")
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    args = parser.parse_args()
    breaches, files, includes = check(args.root, args.max_lines)
    for breach in breaches:
        print(breach)
    if breaches:
        print(f"layers: {len(breaches)} breach(es) of docs/ARCHITECTURE.md's rules", file=sys.stderr)
        return 1
    print(f"layers: {files} sources, {includes} project includes: every include points down, "
          f"no non-test source over {args.max_lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
