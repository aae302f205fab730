"""ratio_table.py's report: the markdown tables (ratio, PSNR, max error over
the bound) per chunking, the summary of ratio / SZ3's ratio over the fields,
and the footnotes of cells that hold no number; also the per-field quotients
and their geometric mean that ratio_table_anchors.py's summary shares."""

import math

from ratio_table_compressors import SZ3, SZ3_BEST, compressor_label
from ratio_table_fields import chunk_shape


def fmt_shape(shape):
    return "x".join(str(n) for n in shape)


def ratio_suffix(row):
    """' [IL]': the predictor that won sz3-best's cell (ratio_table_anchors.py)."""
    short = {"INTERP": "I", "INTERP_LORENZO": "IL", "LORENZO_REG": "LR"}
    return " [%s]" % short[row["predictor"]] if "predictor" in row else ""


def field_pairs(fields, results, rel, chunking, c, base, fn=lambda a, b: a["ratio"] / b["ratio"]):
    """[(fn(c's row, base's row), field name)] over the fields where both have a number."""
    pairs = []
    for f in fields:
        ours, theirs = (results.get((f.name, rel, chunking, k)) for k in (c, base))
        if ours and theirs and "ratio" in ours and "ratio" in theirs:
            value = fn(ours, theirs)
            if math.isfinite(value):
                pairs.append((value, f.name))
    return pairs


def geo_worst(pairs):
    """(geometric mean, (smallest value, its field)) of [(value, field)]."""
    return math.exp(sum(math.log(v) for v, _ in pairs) / len(pairs)), min(pairs)


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
            return "%.2f%s" % (r["ratio"], ratio_suffix(r))
        return "%.2f (%.2fx)%s" % (r["ratio"], r["ratio"] / base["ratio"], ratio_suffix(r))

    def error_cell(f, rel, c, r):
        text = "%.4f (%d)" % (r["err_over_bound"], r["over"])
        if f.fill is not None:
            text += "; fill changed %d" % r["fill_changed"]
        return text

    header("Ratio (x SZ3's ratio%s)" % ("; [I], [IL], [LR]: the predictor of sz3-best"
                                        if SZ3_BEST in compressors else ""))
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
                quotients = field_pairs(fields, results, rel, chunking, c, SZ3)
                if not quotients:
                    print("| %s | %s | %g | 0 | n/a | n/a |" % (chunking, compressor_label(c), rel))
                    continue
                geo, low = geo_worst(quotients)
                print("| %s | %s | %g | %d | %.3f | %.3f (%s) |" % (chunking, compressor_label(c), rel,
                                                                    len(quotients), geo, low[0], low[1]))
    print()
