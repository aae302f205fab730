"""ratio_table.py's report: the markdown tables (ratio, PSNR, max error over
the bound) per chunking, the summary of ratio / SZ3's ratio over the fields,
and the footnotes of cells that hold no number."""

import math

from ratio_table_compressors import SZ3, compressor_label
from ratio_table_fields import chunk_shape


def fmt_shape(shape):
    return "x".join(str(n) for n in shape)


def fmt_psnr(p):
    return "inf" if p == math.inf else "%.1f" % p


class Notes:
    """Footnotes for cells that hold no number (refusals, failures), numbered once each."""

    def __init__(self):
        self.texts = []

    def ref(self, text):
        if text not in self.texts:
            self.texts.append(text)
        return "[%d]" % (self.texts.index(text) + 1)

    def cell(self, row, fn):
        if row is None:
            return "-"
        if "refused" in row:
            return "n/a " + self.ref(row["refused"])
        if "error" in row:
            return "FAILED " + self.ref(row["error"])
        return fn(row)

    def print(self):
        for i, text in enumerate(self.texts, 1):
            print("[%d] %s" % (i, " ".join(text.split())))
        if self.texts:
            print()


def print_tables(fields, bounds, chunking, compressors, results, notes):
    labels = [compressor_label(c) for c in compressors]

    def rows(fn):
        for f in fields:
            chunks = fmt_shape(chunk_shape(f.data.shape, f.data.dtype.itemsize, chunking))
            for rel in bounds:
                cells = [notes.cell(results.get((f.name, rel, chunking, c)), lambda r, c=c: fn(f, rel, c, r))
                         for c in compressors]
                print("| %s | %s | %g | %s |" % (f.name, chunks, rel, " | ".join(cells)))
        print()

    def header(title):
        print("#### %s, %s\n" % (title, "whole field as one chunk" if chunking == "whole" else "chunks of about 4 MiB"))
        print("| field | chunks | NOA | " + " | ".join(labels) + " |")
        print("|---|---|---:|" + "---:|" * len(labels))

    def ratio_cell(f, rel, c, r):
        base = results.get((f.name, rel, chunking, SZ3))
        if c == SZ3 or not base or "ratio" not in base:
            return "%.2f" % r["ratio"]
        return "%.2f (%.2fx)" % (r["ratio"], r["ratio"] / base["ratio"])

    def error_cell(f, rel, c, r):
        text = "%.4f (%d)" % (r["err_over_bound"], r["over"])
        if f.fill is not None:
            text += "; fill changed %d" % r["fill_changed"]
        return text

    header("Ratio (x SZ3's ratio)")
    rows(ratio_cell)
    header("PSNR (dB)")
    rows(lambda f, rel, c, r: fmt_psnr(r["psnr"]))
    header("Max error / bound (elements over the bound)")
    rows(error_cell)


def print_summary(fields, bounds, chunkings, compressors, results):
    others = [c for c in compressors if c != SZ3]
    if SZ3 not in compressors or not others:
        return
    print("#### Ratio / SZ3's ratio over the fields: geometric mean, smallest (field)\n")
    print("| chunking | compressor | NOA | fields | geometric mean | smallest |")
    print("|---|---|---:|---:|---:|---|")
    for chunking in chunkings:
        for c in others:
            for rel in bounds:
                quotients = []
                for f in fields:
                    ours, base = (results.get((f.name, rel, chunking, k)) for k in (c, SZ3))
                    if ours and base and "ratio" in ours and "ratio" in base:
                        quotients.append((ours["ratio"] / base["ratio"], f.name))
                if not quotients:
                    print("| %s | %s | %g | 0 | n/a | n/a |" % (chunking, compressor_label(c), rel))
                    continue
                geo = math.exp(sum(math.log(q) for q, _ in quotients) / len(quotients))
                low = min(quotients)
                print("| %s | %s | %g | %d | %.3f | %.3f (%s) |" % (chunking, compressor_label(c), rel,
                                                                    len(quotients), geo, low[0], low[1]))
    print()
