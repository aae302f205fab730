"""ratio_table.py's compressors: each one's h5py arguments for a case (SZ3
and ZFP through hdf5plugin, the H5Z-FZ presets through tools/python/h5fz), the
round trip through an in-memory HDF5 file, and the quality of what comes back.
The names of every compressor are here; the anchors that go around HDF5
(sz3-best through pysz, sperr) are measured in ratio_table_anchors.py.

h5fz is importable once ratio_table.py has put tools/python on sys.path."""

import io
import math
import time

import numpy as np

import h5fz  # compression_opts, preset names, FILTER_ID
from ratio_table_fields import chunk_shape

SZ3 = "sz3"
SZ3_REL = "sz3-rel"
SZ3_BEST = "sz3-best"
SPERR = "sperr"
ZFP = "zfp"
OTHERS = (SZ3, SZ3_REL, SZ3_BEST, SPERR, ZFP)     # every compressor that is not an H5Z-FZ preset
LABELS = {SZ3: "SZ3", SZ3_REL: "SZ3 relative=", SZ3_BEST: "SZ3-best (pysz)", SPERR: "SPERR pwe",
          ZFP: "ZFP accuracy"}


def compressor_label(name):
    if name in LABELS:
        return LABELS[name]
    return "%s (%d)" % (name, h5fz.preset_id(name))


def compressor_kwargs(name, hdf5plugin, rel, abs_bound, fz_mode):
    """h5py create_dataset arguments of a compressor for one case."""
    if name == SZ3:
        return dict(hdf5plugin.SZ3(absolute=abs_bound))
    if name == SZ3_REL:
        return dict(hdf5plugin.SZ3(relative=rel))
    if name == ZFP:
        return dict(hdf5plugin.Zfp(accuracy=abs_bound))
    bound = abs_bound if fz_mode == "abs" else rel
    return {"compression": h5fz.FILTER_ID, "compression_opts": h5fz.compression_opts(name, fz_mode, bound)}


class Refused(Exception):
    """The filter refused the dataset's options when it was created."""


def round_trip(h5py, field, chunks, kwargs):
    """Write the field into an HDF5 file in memory, close it, open it again and
    read the field back (so no read is served from HDF5's chunk cache):
    (stored bytes, decoded)."""
    image = io.BytesIO()
    with h5py.File(image, "w") as f:
        extra = {} if field.fill is None else {"fillvalue": field.fill}
        try:
            ds = f.create_dataset("x", shape=field.data.shape, dtype=field.data.dtype, chunks=chunks,
                                  **extra, **kwargs)
        except ValueError as e:
            raise Refused(str(e)) from None
        ds.write_direct(field.data)
    with h5py.File(image, "r") as f:
        ds = f["x"]
        # HDF5 stores a chunk unfiltered, silently, when an optional filter fails on it.
        skipped = sum(1 for i in range(ds.id.get_num_chunks()) if ds.id.get_chunk_info(i).filter_mask)
        if skipped:
            raise RuntimeError("filter skipped on %d chunk(s): stored uncompressed" % skipped)
        stored = ds.id.get_storage_size()
        decoded = np.empty_like(field.data)
        ds.read_direct(decoded)
    return stored, decoded


def quality(field, decoded, abs_bound):
    """PSNR, max error / bound, elements over the bound, fill elements changed."""
    wide = np.longdouble if field.data.dtype.itemsize > 4 else np.float64   # exact differences
    x = field.data[field.valid].astype(wide)
    y = decoded[field.valid].astype(wide)
    err = np.abs(x - y)
    err[~np.isfinite(y)] = np.inf
    raw = field.data.view(np.uint8).reshape(field.data.shape + (-1,))
    raw_out = decoded.view(np.uint8).reshape(decoded.shape + (-1,))
    changed = (raw != raw_out).any(-1)
    nonfinite_changed = int(np.count_nonzero(changed & ~np.isfinite(field.data)))
    mse = float(np.mean(err * err)) if err.size else 0.0
    psnr = math.inf if mse == 0 else 20 * math.log10(field.value_range) - 10 * math.log10(mse)
    return {
        "psnr": psnr,
        "err_over_bound": float(err.max() / wide(abs_bound)) if err.size else 0.0,
        "over": int(np.count_nonzero(err > wide(abs_bound))) + nonfinite_changed,
        "fill_changed": int(np.count_nonzero(changed & field.fill_mask)),
    }


def measure(h5py, hdf5plugin, field, rel, chunking, compressor, fz_mode):
    abs_bound = rel * field.value_range
    chunks = chunk_shape(field.data.shape, field.data.dtype.itemsize, chunking)
    row = {}
    try:
        kwargs = compressor_kwargs(compressor, hdf5plugin, rel, abs_bound, fz_mode)
        start = time.perf_counter()
        stored, decoded = round_trip(h5py, field, chunks, kwargs)
        row["seconds"] = time.perf_counter() - start
    except Refused as e:
        row["refused"] = str(e)
        return row
    except Exception as e:  # one failing compressor must not hide the others
        row["error"] = "%s: %s" % (type(e).__name__, e)
        return row
    row["ratio"] = field.data.nbytes / stored
    row.update(quality(field, decoded, abs_bound))
    return row
