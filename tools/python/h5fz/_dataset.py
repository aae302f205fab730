"""h5fz's helpers that look at a dataset's shape or values: the chunk shape
to write with (chunks), the blocks of rows a large dataset is read in
(row_blocks), and the absolute bound a NOA bound means over a whole dataset
(global_abs_bound, mode "noa-global"). numpy is imported when called.
"""


def row_blocks(data, block_bytes):
    """Slices of ``data`` (an array or h5py dataset of rank >= 1) along its
    first axis, about ``block_bytes`` each (at least one row): what
    :func:`global_abs_bound` and :func:`compare` read at a time, so that a
    dataset larger than memory is read in bounded memory."""
    import numpy as np
    shape = tuple(data.shape)
    row = max(1, np.dtype(data.dtype).itemsize * int(np.prod(shape[1:], dtype=np.int64)))
    step = max(1, int(block_bytes) // row)
    return [slice(i, i + step) for i in range(0, shape[0], step)]


def global_abs_bound(data, noa, missing=None, block_bytes=64 << 20):
    """The absolute bound NOA ``noa`` means over a whole dataset.

    ``noa`` x (max - min) of ``data``'s finite elements, leaving out those
    equal to ``missing`` (compared in the data's type) and, for an h5py
    Dataset with a fill value of its own, those equal to it (the filter
    leaves both out of every chunk's range), read
    about ``block_bytes`` at a time along the first axis (``data``: a numpy
    array or an h5py Dataset, so a dataset larger than memory is fine). With
    it as an ABS bound every chunk holds the same bound, where mode "noa"
    scales it by each chunk's own range. A dataset without two different
    finite values gives the type's smallest normal number (every value then
    comes back exactly).
    """
    import numpy as np
    b = float(noa)
    if not (b > 0.0 and b != float("inf")):
        raise ValueError("error bound must be positive and finite, got %r" % noa)
    dt = np.dtype(data.dtype)
    shape = tuple(data.shape) if data.shape is not None else ()
    lo, hi = None, None
    special = []
    if missing is not None and dt.kind in "fiu":
        special.append(np.asarray(missing).astype(dt))
    own_fill = _user_fill_value(data)
    if own_fill is not None and dt.kind in "fiu":
        special.append(np.asarray(own_fill).astype(dt))
    blocks = [np.asarray(data[()])] if len(shape) == 0 else (np.asarray(data[s]) for s in row_blocks(data,
                                                                                                    block_bytes))
    for block in blocks:
        keep = np.isfinite(block) if dt.kind == "f" else np.ones(block.shape, dtype=bool)
        for value in special:
            keep &= block != value
        if not keep.any():
            continue
        v = block[keep]
        bmin, bmax = float(v.min()), float(v.max())
        lo = bmin if lo is None else min(lo, bmin)
        hi = bmax if hi is None else max(hi, bmax)
    if lo is None or hi == lo:
        return float(np.finfo(dt).tiny) if dt.kind == "f" else 1.0
    return b * (hi - lo)


def _user_fill_value(data):
    """An h5py Dataset's fill value when it set one (HDF5's default 0 is no
    marker); None for anything else."""
    try:
        dcpl = data.id.get_create_plist()
        import h5py
        if dcpl.fill_value_defined() != h5py.h5d.FILL_VALUE_USER_DEFINED:
            return None
        return data.fillvalue
    except (AttributeError, TypeError, ValueError, ImportError):
        return None


SUGGESTED_CHUNK_BYTES = 4 << 20


def chunks(shape, dtype=None, element_bytes=None, target_bytes=SUGGESTED_CHUNK_BYTES):
    """The chunk shape to give h5py's ``create_dataset(chunks=...)`` (a tuple).

    The project's rule (``fz::suggest_chunk_shape``, ``h5fz params --shape``;
    README "Choosing chunks"): the fastest axes whole, as many as fit in
    ``target_bytes`` (4 MiB); the next axis in the fewest equal pieces that
    fit; the slower axes 1; a dataset that fits is one chunk. Extents of 0
    count as 1. The element size comes from ``dtype`` (anything numpy takes)
    or ``element_bytes`` (default 4). h5py's own default chunks are often
    tens of KiB, and each chunk is coded on its own: ratio and speed suffer.
    """
    shape = tuple(int(d) for d in shape)
    if not shape:
        raise ValueError("h5fz.chunks: a dataset has at least one dimension")
    if element_bytes is None:
        if dtype is not None:
            import numpy
            element_bytes = numpy.dtype(dtype).itemsize
        else:
            element_bytes = 4
    element_bytes = int(element_bytes)
    target_bytes = int(target_bytes)
    if element_bytes < 1:
        raise ValueError("h5fz.chunks: elements of %d bytes" % element_bytes)
    if target_bytes < element_bytes or target_bytes > 0xFFFFFFFF:
        raise ValueError("h5fz.chunks: a target of %d bytes; it must hold one element and stay below 4 GiB "
                         "(HDF5's limit on a chunk)" % target_bytes)
    if any(d < 0 for d in shape):
        raise ValueError("h5fz.chunks: negative extent in %r" % (shape,))
    extent = [max(d, 1) for d in shape]
    chunk = [1] * len(extent)
    unit = element_bytes
    for k in range(len(extent) - 1, -1, -1):
        fit = target_bytes // unit
        if extent[k] <= fit:
            chunk[k] = extent[k]
            unit *= extent[k]
            continue
        pieces = -(-extent[k] // fit)
        chunk[k] = -(-extent[k] // pieces)
        break
    return tuple(chunk)
