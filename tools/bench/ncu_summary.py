#!/usr/bin/env python3
"""Tables from Nsight Compute's per-kernel summaries, for docs/PERFORMANCE.md.

Reads what `ncu --print-summary per-kernel --metrics gpu__time_duration.sum,
dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed PROGRAM`
printed (one file per run) and prints, per file, a markdown table of the
kernels that took 8 us or more, longest first: blocks, average duration,
average DRAM traffic and the share of the DRAM peak it moved.

    python3 tools/bench/ncu_summary.py ncu_fzgpu.txt [ncu_pfpl.txt ...]

With --brief, one line per file instead, every kernel's name without its
namespaces and template arguments and its average microseconds, longest first
(a table cell for tools/bench/device_ab.sh).
"""
import re
import sys

UNITS = {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6, "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1, "Gbyte": 1e3, "%": 1}
KERNEL = re.compile(r"^  (\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), .*Invocations (\d+)")
METRIC = re.compile(r"^\s+(\S+)\s+(\S+)\s+([\d.,]+)\s+([\d.,]+)\s+([\d.,]+)\s*$")


def short_name(signature):
    name = re.sub(r"\(.*", "", signature)  # the parameter list
    name = re.sub(r"<unnamed>::|\(anonymous namespace\)::", "", name)
    return re.sub(r"^void ", "", name)[:60]


def kernels(path):
    rows, current = [], None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("==PROF=="):
                continue
            m = KERNEL.match(line)
            if m:
                blocks = int(m.group(2)) * int(m.group(3)) * int(m.group(4))
                current = {"name": short_name(m.group(1)), "signature": m.group(1), "blocks": blocks}
                rows.append(current)
                continue
            m = METRIC.match(line)
            if m and current is not None and m.group(2) in UNITS:
                current[m.group(1)] = float(m.group(5).replace(",", "")) * UNITS[m.group(2)]
    return rows


def bare_name(signature):
    name = re.sub(r"\(anonymous namespace\)", "", signature)
    name = re.sub(r"\(.*", "", name)  # the parameter list
    while re.search(r"<[^<>]*>", name):
        name = re.sub(r"<[^<>]*>", "", name)
    return name.split("::")[-1].split(" ")[-1]


def main(args):
    brief = "--brief" in args
    paths = [a for a in args if a != "--brief"]
    if not paths:
        print(__doc__)
        return 2
    for path in paths:
        if brief:
            rows = sorted(kernels(path), key=lambda r: -r.get("gpu__time_duration.sum", 0))
            print(", ".join(f"{bare_name(r['signature'])} {r.get('gpu__time_duration.sum', 0):.0f}" for r in rows))
            continue
        print(f"\n{path}:\n\n| kernel | blocks | us | DRAM MB | % of DRAM peak |\n|---|---:|---:|---:|---:|")
        for r in sorted(kernels(path), key=lambda r: -r.get("gpu__time_duration.sum", 0)):
            us = r.get("gpu__time_duration.sum", 0)
            if us < 8:
                continue
            print(f"| {r['name']} | {r['blocks']} | {us:.0f} | {r.get('dram__bytes.sum', 0):.0f} | "
                  f"{r.get('dram__throughput.avg.pct_of_peak_sustained_elapsed', 0):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
