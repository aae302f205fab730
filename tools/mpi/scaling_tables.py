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


def rates(reports, label):
    lines = ["| %s | ranks | preset | ratio | GiB per rank | write s | write GB/s | per rank | read s | read GB/s "
             "| per rank | chunks vs one process |" % (label or "scaling"),
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for report in reports:
        for row in report["results"]:
            total = row["bytes_per_rank"] * row["ranks"]
            verdict = ("equal" if row["checked"] else "lossless" if row["preset"] in ("none", "lossless")
                       else "unchecked") if row["equal"] else "DIFFER"
            lines.append("| %s | %d | %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f | %s |" % (
                report["scaling"], row["ranks"], row["preset"], row["ratio"], row["bytes_per_rank"] / 2**30,
                row["write_s"], total / row["write_s"] / 1e9, row["bytes_per_rank"] / row["write_s"] / 1e9,
                row["read_s"], total / row["read_s"] / 1e9, row["bytes_per_rank"] / row["read_s"] / 1e9, verdict))
    return "\n".join(lines)


def phases(reports, label):
    lines = ["| %s | ranks | preset | create s | H5Dwrite s | filter s | file system s | HDF5's rest s | write s "
             "| read: filter s | file system s | HDF5's rest s | read s |" % (label or "scaling"),
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for report in reports:
        for row in report["results"]:
            fs_w, fs_r = row.get("fs_write_s", 0.0), row.get("fs_read_s", 0.0)
            lines.append("| %s | %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" % (
                report["scaling"], row["ranks"], row["preset"], row["create_s"], row["h5dwrite_s"],
                row["compress_s"], fs_w, max(0.0, row["write_s"] - row["compress_s"] - fs_w), row["write_s"],
                row["decompress_s"], fs_r, max(0.0, row["read_s"] - row["decompress_s"] - fs_r), row["read_s"]))
    return "\n".join(lines)


def devices(reports):
    seen = []
    for report in reports:
        line = "- %s, %d rank(s): %s" % (report["scaling"], report["ranks"],
                                          "; ".join("rank %d: %s" % (i, d) for i, d in enumerate(report["devices"])))
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
    print("Devices, as each rank reported them:")
    print()
    print(devices(reports))
    if failed:
        print("\nchecks FAILED in: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
