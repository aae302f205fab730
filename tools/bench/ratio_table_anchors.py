"""ratio_table.py's anchors: the compressors issue 30's targets are stated
against, beside hdf5plugin's SZ3 (ratio_table_compressors.py), and the summary
that divides each H5Z-FZ preset's ratio by each anchor's.

  - sz3-best: SZ3 through pysz (`pip install pysz`), mode ABS with the bound,
    once with each of its three predictors (szAlgorithm INTERP,
    INTERP_LORENZO, LORENZO_REG); the row is the predictor with the highest
    ratio over the whole field (for 4mib: the sum over the chunks), and the
    cell names it. SZ3 picks no predictor per chunk this way; that is what a
    user who tries all three on a field gets.
  - sperr: SPERR's point-wise error mode through numcodecs-wasm-sperr
    (`pip install numcodecs-wasm-sperr`), Sperr(mode="pwe", pwe=bound).
  - zfp: hdf5plugin.Zfp(accuracy=bound), ZFP's fixed-accuracy mode, through
    h5py like SZ3 (its kwargs are in ratio_table_compressors.py).

pysz and SPERR are no HDF5 filters: the field, or each chunk of the 4mib
chunking on its own (the edge chunk at its true, unpadded size), is
compressed in memory with the same absolute bound, the ratio is the field's
bytes over the sum of the compressed sizes, and the decoded chunks are put
back into one array whose quality is measured as for the others (errors in
double, fill elements left out of the range and the errors; both compress a
fill value as data, as SZ3 does). A missing package prints how to install it
and the compressor is left out.

Kept apart from ratio_table_compressors.py (the HDF5 round trip) because
these go around HDF5, and from ratio_table_report.py because the summary's
form is issue 30's, not issue 14's."""

import importlib
import itertools
import time

import numpy as np

from ratio_table_compressors import SPERR, SZ3, SZ3_BEST, SZ3_REL, ZFP, quality
from ratio_table_fields import chunk_shape
from ratio_table_report import field_pairs, geo_worst

# Optional packages: module to import and the line that installs it.
OPTIONAL = {
    SZ3_BEST: ("pysz", "pip install pysz   (SZ3's Python binding; measured with 1.1.0)"),
    SPERR: ("numcodecs_wasm_sperr", "pip install numcodecs-wasm-sperr   (measured with 0.2.3)"),
}
# The anchors of issue 30's targets, in the order of the summary: name, label.
ANCHORS = ((SZ3_BEST, "SZ3-best"), (SZ3, "SZ3 hdf5plugin"), (SPERR, "SPERR pwe"), (ZFP, "ZFP accuracy"))
ANCHOR_NAMES = tuple(a for a, _ in ANCHORS) + (SZ3_REL,)
PREDICTORS = ("INTERP", "INTERP_LORENZO", "LORENZO_REG")   # pysz.szAlgorithm names


def available(names):
    """Drop the compressors whose package does not import, with a line each on
    how to install it: (kept names, messages)."""
    kept, messages = [], []
    for name in names:
        if name in OPTIONAL:
            module, install = OPTIONAL[name]
            try:
                importlib.import_module(module)
            except ImportError as e:
                messages.append("ratio_table: %s left out: cannot import %s (%s); install it with: %s"
                                % (name, module, e, install))
                continue
        kept.append(name)
    return kept, messages


def versions():
    """'pysz 1.1.0, numcodecs-wasm-sperr 0.2.3' for the packages that are there."""
    from importlib import metadata
    found = []
    for dist in ("pysz", "numcodecs-wasm-sperr"):
        try:
            found.append("%s %s" % (dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            found.append("%s not installed" % dist)
    return ", ".join(found)


def chunk_slices(shape, chunks):
    """The slices of every chunk of a regular grid, the edge ones cut to the shape."""
    ranges = [range(0, n, c) for n, c in zip(shape, chunks)]
    for corner in itertools.product(*ranges):
        yield tuple(slice(o, min(o + c, n)) for o, c, n in zip(corner, chunks, shape))


# ---- the codecs: (compress(array) -> bytes count and token, decompress(token) -> array) ----

def pysz_codec(predictor, abs_bound):
    import pysz

    def run(block):
        config = pysz.szConfig(block.shape)
        config.errorBoundMode = pysz.szErrorBoundMode.ABS
        config.absErrorBound = float(abs_bound)
        config.cmprAlgo = getattr(pysz.szAlgorithm, predictor)
        # A copy: SZ3 may work in the buffer it is given.
        packed, _ = pysz.sz.compress(np.ascontiguousarray(block).copy(), config)
        out, _ = pysz.sz.decompress(packed, block.dtype, block.shape)
        return packed.nbytes, np.asarray(out).reshape(block.shape)
    return run


def sperr_codec(abs_bound):
    from numcodecs_wasm_sperr import Sperr
    codec = Sperr(mode="pwe", pwe=float(abs_bound))

    def run(block):
        packed = np.asarray(codec.encode(np.ascontiguousarray(block)))
        out = np.asarray(codec.decode(packed)).reshape(block.shape)
        return packed.nbytes, out
    return run


def chunked(field, chunks, codec):
    """Every chunk through the codec on its own: (summed compressed bytes, decoded field)."""
    decoded = np.empty_like(field.data)
    total = 0
    for where in chunk_slices(field.data.shape, chunks):
        size, out = codec(field.data[where])
        if out.dtype != field.data.dtype:
            raise RuntimeError("decoded %s, expected %s" % (out.dtype, field.data.dtype))
        decoded[where] = out
        total += size
    return total, decoded


def measure_direct(field, rel, chunking, compressor):
    """A row of ratio_table's results for sz3-best or sperr (see the docstring)."""
    abs_bound = rel * field.value_range
    chunks = chunk_shape(field.data.shape, field.data.dtype.itemsize, chunking)
    if compressor == SZ3_BEST:
        tries = [(p, pysz_codec(p, abs_bound)) for p in PREDICTORS]
    else:
        tries = [(None, sperr_codec(abs_bound))]
    rows = []
    try:
        for predictor, codec in tries:
            start = time.perf_counter()
            stored, decoded = chunked(field, chunks, codec)
            row = {"seconds": time.perf_counter() - start, "ratio": field.data.nbytes / stored}
            row.update(quality(field, decoded, abs_bound))
            rows.append((predictor, row))
    except Exception as e:  # one failing compressor must not hide the others
        return {"error": "%s: %s" % (type(e).__name__, e)}
    best_predictor, best = max(rows, key=lambda pr: pr[1]["ratio"])
    if best_predictor:
        best["predictor"] = best_predictor
        best["tries"] = {p: r["ratio"] for p, r in rows}
        best["tries_over"] = sum(r["over"] for _, r in rows)   # elements over the bound, all three
        best["seconds"] = sum(r["seconds"] for _, r in rows)
    return best


# ---- report -----------------------------------------------------------------------------

def print_predictors(fields, bounds, chunkings, results):
    """sz3-best: each predictor's ratio, the winner marked."""
    if not any(k[3] == SZ3_BEST for k in results):
        return
    print("#### SZ3 through pysz: ratio of each predictor (the best one is sz3-best's)\n")
    print("| field | chunking | NOA | " + " | ".join(PREDICTORS) + " | best |")
    print("|---|---|---:|" + "---:|" * len(PREDICTORS) + "---|")
    for f in fields:
        for chunking in chunkings:
            for rel in bounds:
                row = results.get((f.name, rel, chunking, SZ3_BEST))
                if not row or "tries" not in row:
                    continue
                print("| %s | %s | %g | %s | %s |" % (f.name, chunking, rel, " | ".join(
                    "%.2f" % row["tries"][p] for p in PREDICTORS), row["predictor"]))
    print()
    wins = {}
    for k, row in results.items():
        if k[3] == SZ3_BEST and "predictor" in row:
            wins.setdefault(k[2], {}).setdefault(row["predictor"], 0)
            wins[k[2]][row["predictor"]] += 1
    for chunking, counts in wins.items():
        print("sz3-best wins (%s): %s" % (chunking, ", ".join("%s %d" % (p, counts.get(p, 0)) for p in PREDICTORS)))
    print()


def print_anchor_summary(fields, bounds, chunkings, compressors, results, label):
    """Issue 30's form: per preset, anchor and bound, the geometric mean over the
    fields of ratio / anchor's ratio and the worst field; then the PSNR
    difference to SZ3-best (mean over the fields, worst field)."""
    anchors = [(a, text) for a, text in ANCHORS if a in compressors]
    presets = [c for c in compressors if c not in ANCHOR_NAMES]
    if not anchors or not presets:
        return
    print("#### Issue 30's targets: preset ratio / anchor ratio over the fields, geometric mean (worst field)\n")
    print("Each cell is over the fields measured by both%s.\n" % (
        "; the PSNR row is the preset's PSNR minus SZ3-best's in dB, mean over the fields (worst field)"
        if SZ3_BEST in compressors else ""))
    print("| chunking | preset | over | " + " | ".join("NOA %g" % b for b in bounds) + " |")
    print("|---|---|---|" + "---:|" * len(bounds))
    for chunking in chunkings:
        for c in presets:
            for anchor, text in anchors:
                cells = []
                for rel in bounds:
                    pairs = field_pairs(fields, results, rel, chunking, c, anchor)
                    if not pairs:
                        cells.append("n/a")
                        continue
                    geo, (low, where) = geo_worst(pairs)
                    cells.append("%.3f (%.2f %s)" % (geo, low, where))
                print("| %s | %s | %s | %s |" % (chunking, label(c), text, " | ".join(cells)))
            if SZ3_BEST in compressors:
                cells = []
                for rel in bounds:
                    diffs = field_pairs(fields, results, rel, chunking, c, SZ3_BEST,
                                        lambda a, b: a["psnr"] - b["psnr"])
                    if not diffs:
                        cells.append("n/a")
                        continue
                    low, where = min(diffs)
                    cells.append("%+.2f (%+.2f %s)" % (sum(d for d, _ in diffs) / len(diffs), low, where))
                print("| %s | %s | PSNR - SZ3-best's, dB | %s |" % (chunking, label(c), " | ".join(cells)))
    print()


def print_anchor_bounds(results):
    """The anchors' elements over the bound (H5Z-FZ's are checked by ratio_table.py)."""
    print("Anchors' elements over the bound (in double; fill elements left out):")
    for anchor, text in ANCHORS:
        rows = [(k, r) for k, r in results.items() if k[3] == anchor and "ratio" in r]
        if not rows:
            continue
        over = [(k, r) for k, r in rows if r["over"]]
        detail = "; ".join("%s NOA %g %s: %d, max err/bound %.7f" % (k[0], k[1], k[2], r["over"],
                                                                      r["err_over_bound"]) for k, r in over)
        extra = ""
        if anchor == SZ3_BEST:
            extra = " (the winners; all three predictors: %d elements)" % sum(r.get("tries_over", 0) for _, r in rows)
        print("  %s: %d in %d of %d measurement(s)%s%s" % (text, sum(r["over"] for _, r in over), len(over),
                                                          len(rows), extra, (": " + detail) if detail else ""))
    print()
