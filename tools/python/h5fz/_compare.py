"""h5fz.compare (this module, h5fz._compare): how far a compressed file is from its original, dataset by
dataset (issue 15, item 6); ``python -m h5fz compare A B [--plot out.png]``.

For every numeric dataset present in both files with the same shape: the
largest absolute error, the largest error relative to the element (over the
nonzero originals), the PSNR over A's finite value range, and both files'
storage ratios (each file's elements' bytes over the bytes it stores for the
dataset). Integer datasets are compared exactly (a difference of uint64
values above 2^53 is not lost to float64); a dataset whose element type
differs between A and B is flagged. Datasets are read a block at a time along the first axis, so files
larger than memory compare in bounded memory. The picture (needs matplotlib)
shows, per dataset, a slice of A, the same slice of B, their difference and
the histogram of the errors.
"""

import math
import os

_BLOCK_BYTES = 64 << 20


def _numeric(dset):
    return dset.dtype.kind in "fiu" and dset.shape is not None and len(dset.shape) > 0


def _blocks(dset_a, dset_b, block_bytes):
    import numpy as np
    from . import row_blocks
    for rows in row_blocks(dset_a, block_bytes):
        yield np.asarray(dset_a[rows]), np.asarray(dset_b[rows])


def dataset_stats(dset_a, dset_b, block_bytes=_BLOCK_BYTES):
    """The comparison of two h5py datasets of one shape (see the module)."""
    import numpy as np
    if dset_a.shape != dset_b.shape:
        raise ValueError("shapes differ: %r and %r" % (dset_a.shape, dset_b.shape))
    max_abs = 0.0
    max_rel = 0.0
    sq = 0.0
    count = 0
    lo, hi = math.inf, -math.inf
    mismatched_special = 0
    integers = dset_a.dtype.kind in "iu" and dset_b.dtype.kind in "iu"
    if integers:
        max_abs = 0
    for a, b in _blocks(dset_a, dset_b, block_bytes):
        if integers:
            d_exact = _integer_differences(a, b)
            if d_exact.size:
                max_abs = max(max_abs, int(d_exact.max()))
        x = a.astype(np.float64)
        y = b.astype(np.float64)
        fx, fy = np.isfinite(x), np.isfinite(y)
        both = fx & fy
        # NaN, Inf and -Inf must come back as they were (the filter keeps them exactly).
        mismatched_special += int(np.count_nonzero(~fx & ~((x == y) | (np.isnan(x) & np.isnan(y)))))
        mismatched_special += int(np.count_nonzero(fx & ~fy))
        if not both.any():
            continue
        d = np.abs(x[both] - y[both]) if not integers else d_exact.ravel().astype(np.float64)
        if not integers:
            max_abs = max(max_abs, float(d.max()))
        nz = x[both] != 0
        if nz.any():
            max_rel = max(max_rel, float((d[nz] / np.abs(x[both][nz])).max()))
        sq += float(np.dot(d, d))
        count += int(d.size)
        lo = min(lo, float(x[both].min()))
        hi = max(hi, float(x[both].max()))
    # Each file's ratio over its own elements' bytes (B may store another type).
    raw_a = int(dset_a.size) * dset_a.dtype.itemsize
    raw_b = int(dset_b.size) * dset_b.dtype.itemsize
    stored_a, stored_b = int(dset_a.id.get_storage_size()), int(dset_b.id.get_storage_size())
    rmse = math.sqrt(sq / count) if count else 0.0
    value_range = hi - lo if count else 0.0
    psnr = math.inf if rmse == 0 else (20 * math.log10(value_range / rmse) if value_range > 0 else -math.inf)
    return {"shape": tuple(dset_a.shape), "dtype": str(dset_a.dtype), "dtype_b": str(dset_b.dtype),
            "dtype_changed": dset_a.dtype != dset_b.dtype, "max_abs_error": max_abs,
            "max_rel_error": max_rel, "rmse": rmse, "psnr": psnr, "value_range": value_range,
            "special_values_changed": mismatched_special,
            "ratio_a": raw_a / stored_a if stored_a else None, "ratio_b": raw_b / stored_b if stored_b else None}


def _integer_differences(a, b):
    """|a - b| of two integer arrays, exactly, as uint64 (or Python ints
    where uint64 cannot hold a mix of int64 and uint64 values)."""
    import numpy as np
    if a.dtype.kind == "u" and b.dtype.kind == "u":
        ua, ub = a.astype(np.uint64), b.astype(np.uint64)
        return np.where(ua >= ub, ua - ub, ub - ua)
    if a.dtype.kind == "i" and b.dtype.kind == "i" or max(a.dtype.itemsize, b.dtype.itemsize) < 8:
        # Offset binary: the order of int64 values is that of these uint64.
        flip = np.uint64(1 << 63)
        ua = a.astype(np.int64).view(np.uint64) ^ flip
        ub = b.astype(np.int64).view(np.uint64) ^ flip
        return np.where(ua >= ub, ua - ub, ub - ua)
    return np.abs(a.astype(object) - b.astype(object))


def compare(path_a, path_b, plot=None, block_bytes=_BLOCK_BYTES):
    """{dataset name: statistics} for the numeric datasets of ``path_a``
    (the original) that ``path_b`` holds with the same shape; others are
    listed under ``"skipped"`` with the reason. ``plot``: a PNG path for the
    picture (matplotlib)."""
    import h5py
    try:  # B's chunks may need the plugin
        from ._register import _register_quietly
        _register_quietly()
    except Exception:  # noqa: BLE001  (comparing plain files needs no plugin)
        pass
    results, skipped = {}, {}
    with h5py.File(path_a, "r") as fa, h5py.File(path_b, "r") as fb:
        names = []
        fa.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for name in names:
            da = fa[name]
            if not _numeric(da):
                skipped["/" + name] = "not a numeric array"
                continue
            if name not in fb or not isinstance(fb[name], h5py.Dataset):
                skipped["/" + name] = "not in B"
                continue
            db = fb[name]
            if db.shape != da.shape:
                skipped["/" + name] = "shape %r in A, %r in B" % (da.shape, db.shape)
                continue
            results["/" + name] = dataset_stats(da, db, block_bytes)
        if plot:
            _plot(fa, fb, list(results), plot)
    if skipped:
        results["skipped"] = skipped
    return results


def _middle_slice(dset):
    """A 2-D slice through the middle of the slower axes (a 1-D dataset: itself)."""
    import numpy as np
    shape = dset.shape
    if len(shape) == 1:
        return np.asarray(dset[()])[None, :]
    index = tuple(s // 2 for s in shape[:-2]) + (slice(None), slice(None))
    return np.asarray(dset[index])


def _plot(fa, fb, names, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError("h5fz compare --plot needs matplotlib (pip install matplotlib)") from e
    import numpy as np
    rows = max(1, len(names))
    fig, axes = plt.subplots(rows, 4, figsize=(16, 3.6 * rows), squeeze=False)
    for r, name in enumerate(names):
        a = _middle_slice(fa[name]).astype(np.float64)
        b = _middle_slice(fb[name]).astype(np.float64)
        diff = b - a
        finite = np.isfinite(a)
        vmin, vmax = (float(a[finite].min()), float(a[finite].max())) if finite.any() else (0.0, 1.0)
        for c, (img, title) in enumerate(((a, "A (original)"), (b, "B (reconstructed)"))):
            im = axes[r][c].imshow(img, vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
            axes[r][c].set_title("%s %s" % (name, title), fontsize=9)
            fig.colorbar(im, ax=axes[r][c])
        lim = float(np.nanmax(np.abs(diff[np.isfinite(diff)]))) if np.isfinite(diff).any() else 1.0
        im = axes[r][2].imshow(diff, vmin=-lim or -1, vmax=lim or 1, cmap="RdBu_r", aspect="auto")
        axes[r][2].set_title("%s B - A" % name, fontsize=9)
        fig.colorbar(im, ax=axes[r][2])
        errors = diff[np.isfinite(diff)].ravel()
        axes[r][3].hist(errors, bins=101)
        axes[r][3].set_title("%s errors (this slice)" % name, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def format_table(results):
    lines = ["| dataset | shape | max abs error | max rel error | PSNR dB | ratio A | ratio B |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, s in results.items():
        if name == "skipped":
            continue
        ratio = lambda r: "-" if r is None else "%.2f" % r  # noqa: E731
        error = s["max_abs_error"]
        error = "%d" % error if isinstance(error, int) else "%.6g" % error  # integers exactly
        lines.append("| %s | %s | %s | %.6g | %.2f | %s | %s |" % (
            name, "x".join(map(str, s["shape"])), error, s["max_rel_error"], s["psnr"],
            ratio(s["ratio_a"]), ratio(s["ratio_b"])))
        if s.get("dtype_changed"):
            lines.append("|   element type changed: %s in A, %s in B |||||||" % (s["dtype"], s["dtype_b"]))
        if s["special_values_changed"]:
            lines.append("|   %d NaN/Inf elements changed |||||||" % s["special_values_changed"])
    for name, why in results.get("skipped", {}).items():
        lines.append("skipped %s: %s" % (name, why))
    return "\n".join(lines)
