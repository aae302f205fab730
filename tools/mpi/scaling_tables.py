"""Markdown tables from fz_mpi bench's JSON reports (--json), for
docs/PERFORMANCE.md: one table of rates and ratios, one of where the time
goes, and the device each rank reported.

    python3 tools/mpi/scaling_tables.py OUT/weak-*.json OUT/strong-*.json [--label "4 GPUs"]
"""

import argparse
import json
import sys


def load(paths):
    reports = []
    for path in paths:
        with open(path) as f:
            report = json.load(f)
        report["path"] = path
        reports.append(report)
    # weak before strong, then by ranks
    reports.sort(key=lambda r: (r["scaling"] != "weak", r["ranks"]))
    return reports


def table(reports, label, columns, cells):
    """A markdown table with a row per preset per report: the scaling, ranks
    and preset, then `cells(row)`; `columns` names the rest, each with its
    alignment ("r" right, else left)."""
    names = [label or "scaling", "ranks", "preset"] + [name for name, _ in columns]
    aligns = ["---", "---:", "---"] + ["---:" if align == "r" else "---" for _, align in columns]
    lines = ["| %s |" % " | ".join(names), "|%s|" % "|".join(aligns)]
    for report in reports:
        for row in report["results"]:
            lines.append("| %s |" % " | ".join([report["scaling"], "%d" % row["ranks"], row["preset"]] + cells(row)))
    return "\n".join(lines)


def rates(reports, label):
    def cells(row):
        total = row["bytes_per_rank"] * row["ranks"]
        verdict = ("equal" if row["checked"] else "lossless" if row["preset"] in ("none", "lossless")
                   else "unchecked") if row["equal"] else "DIFFER"
        return ["%.2f" % row["ratio"], "%.2f" % (row["bytes_per_rank"] / 2**30), "%.3f" % row["write_s"],
                "%.2f" % (total / row["write_s"] / 1e9), "%.2f" % (row["bytes_per_rank"] / row["write_s"] / 1e9),
                "%.3f" % row["read_s"], "%.2f" % (total / row["read_s"] / 1e9),
                "%.2f" % (row["bytes_per_rank"] / row["read_s"] / 1e9), verdict]
    columns = [("ratio", "r"), ("GiB per rank", "r"), ("write s", "r"), ("write GB/s", "r"), ("per rank", "r"),
               ("read s", "r"), ("read GB/s", "r"), ("per rank", "r"), ("chunks vs one process", "l")]
    return table(reports, label, columns, cells)


def phases(reports, label):
    def cells(row):
        fs_w, fs_r = row.get("fs_write_s", 0.0), row.get("fs_read_s", 0.0)
        seconds = [row["create_s"], row["h5dwrite_s"], row["compress_s"], fs_w,
                   max(0.0, row["write_s"] - row["compress_s"] - fs_w), row["write_s"], row["decompress_s"], fs_r,
                   max(0.0, row["read_s"] - row["decompress_s"] - fs_r), row["read_s"]]
        return ["%.3f" % value for value in seconds]
    columns = [(name, "r") for name in ("create s", "H5Dwrite s", "filter s", "file system s", "HDF5's rest s",
                                        "write s", "read: filter s", "file system s", "HDF5's rest s", "read s")]
    return table(reports, label, columns, cells)


def memory(reports, label):
    def cells(row):
        return ["%.0f" % (row["write_faults"] / 1000), "%.0f" % row["write_rss_mib"],
                "%.0f" % (row["read_faults"] / 1000), "%.0f" % row["read_rss_mib"]]
    columns = [("write: page faults (k)", "r"), ("MiB above start", "r"), ("read: page faults (k)", "r"),
               ("MiB above start", "r")]
    return table(reports, label, columns, cells)


def devices(reports):
    seen = []
    for report in reports:
        line = "- %s, %d rank(s): %s" % (report["scaling"], report["ranks"],
                                          "; ".join("rank %d: %s" % (i, d) for i, d in enumerate(report["devices"])))
        if report.get("first_write_s"):
            line += "; untimed first write and read %.3f s" % report["first_write_s"]
        if report.get("glibc_tunables"):
            line += "; GLIBC_TUNABLES=%s" % report["glibc_tunables"]
        if report.get("frame_buffers"):
            line += "; H5Z_FZ_FRAME_BUFFERS=%s" % report["frame_buffers"]
        seen.append(line)
    return "\n".join(seen)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    reports = load(args.reports)
    failed = [r["path"] for r in reports if not r.get("passed")]
    print(rates(reports, args.label))
    print()
    print("Where the time goes (slowest rank each; HDF5's rest = the whole minus the filter and the file system):")
    print()
    print(phases(reports, args.label))
    print()
    if all("write_faults" in row for report in reports for row in report["results"]):
        print("Memory (the largest rank each): minor page faults, and resident memory above the rank's start "
              "(its slabs), during the write and during the read:")
        print()
        print(memory(reports, args.label))
        print()
    print("Devices, as each rank reported them (and the untimed first write of the whole slab):")
    print()
    print(devices(reports))
    if failed:
        print("\nchecks FAILED in: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
