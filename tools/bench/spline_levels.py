#!/usr/bin/env python3
"""cuszhi-cr's ratio and PSNR per (alpha, beta) against SZ3-best, at one value-range-relative bound.

A benchmark program, not a test (issue 30: the level bounds of ratio-first).
For each real field (../shared/data, and etopo5 / levitus from
ferret-datasets through ratio_table_fields) it writes the field as one chunk
through h5py with cuszhi-cr in ABS mode at rel x the field's range, once with
the default tuning and once per manual (alpha, beta) given, reads it back
(file closed first, so no chunk cache answers), and prints ratio and PSNR;
then SZ3's best of pysz's three predictors at the same bound.

    HDF5_PLUGIN_PATH=build/plugin python3 tools/bench/spline_levels.py 1e-2 "1,1 1.25,2"
"""
import io
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import h5fz  # noqa: E402
import ratio_table_fields  # noqa: E402

PREDICTORS = ("INTERP", "INTERP_LORENZO", "LORENZO_REG")


def fields():
    data = os.environ.get("FZ_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))
    out = {f.name: f.data for f in ratio_table_fields.load_real_fields(data, [])}
    for f in ratio_table_fields.load_ferret_fields(ratio_table_fields.FERRET_DIR, ["etopo5"], h5py):
        out[f.name] = f.data
    return out


def psnr(x, y, span):
    mse = np.mean((x.astype(np.float64) - y) ** 2)
    return float("inf") if mse == 0 else 20 * np.log10(span) - 10 * np.log10(mse)


def fz_round_trip(x, opts):
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        stored = f.create_dataset("x", data=x, chunks=x.shape, compression=h5fz.FILTER_ID,
                                  compression_opts=opts).id.get_storage_size()
    with h5py.File(buffer, "r") as f:
        return x.nbytes / stored, f["x"][...]


def sz3_best(x, eb):
    import pysz
    best = None
    for predictor in PREDICTORS:
        config = pysz.szConfig(x.shape)
        config.errorBoundMode = pysz.szErrorBoundMode.ABS
        config.absErrorBound = eb
        config.cmprAlgo = getattr(pysz.szAlgorithm, predictor)
        packed, _ = pysz.sz.compress(np.ascontiguousarray(x).copy(), config)
        y, _ = pysz.sz.decompress(packed, x.dtype, x.shape)
        if best is None or x.nbytes / len(packed) > best[0]:
            best = (x.nbytes / len(packed), y, predictor)
    return best


def main():
    rel = float(sys.argv[1]) if len(sys.argv) > 1 else 1e-2
    pairs = [tuple(float(v) for v in p.split(",")) for p in (sys.argv[2] if len(sys.argv) > 2 else "1,1").split()]
    print("rel %g: ratio / PSNR dB per tuning; sz3-best last\n" % rel)
    print("| field | default | " + " | ".join("alpha %g beta %g" % p for p in pairs) + " | SZ3-best |")
    print("|---" * (len(pairs) + 3) + "|")
    for name, x in fields().items():
        finite = x[np.isfinite(x)]
        span = float(finite.max() - finite.min())
        eb = rel * span
        cells = []
        for pair in [None] + pairs:
            if pair is None:
                opts = h5fz.compression_opts("cuszhi-cr", "abs", eb)
            else:
                opts = h5fz.compression_opts("cuszhi-cr", "abs", eb, tuning="manual", alpha=pair[0], beta=pair[1])
            ratio, y = fz_round_trip(x, opts)
            cells.append("%.1f / %.1f" % (ratio, psnr(x, y, span)))
        ratio, y, predictor = sz3_best(x, eb)
        cells.append("%.1f / %.1f (%s)" % (ratio, psnr(x, y, span), predictor))
        print("| %s | %s |" % (name, " | ".join(cells)))


if __name__ == "__main__":
    main()
