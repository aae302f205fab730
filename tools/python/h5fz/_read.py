"""h5fz.read: a dataset's stored chunks fetched with read_direct_chunk and
decoded many at once by the engine (all cores, or the GPU), instead of
HDF5's one chunk at a time in one thread through the filter.

The decoder is the plugin itself: libH5Zfz.so exports a small C interface
(filter/reader_api.cpp) beside HDF5's entry points, loaded here with ctypes.
Frames decode to the bytes the filter would return, so the values are
exactly those of ``dataset[selection]``.
"""

import concurrent.futures
import ctypes
import itertools
import math
import os

# 2: the decoders that check each frame against the dataset's cd_values as
# the filter does (h5z_fz_decode_dataset_batch).
_READER_VERSION = 2
_LIB = None
# Decoded bytes per group of chunks handed to the decoder at once: enough
# chunks in flight for every core or the GPU, and a bounded amount of memory
# (frames and partial chunks) besides the result.
_GROUP_BYTES = 256 << 20


def _library():
    """The plugin loaded for its decoding interface (once per process)."""
    global _LIB
    if _LIB is None:
        from . import plugin_path
        path = plugin_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise FileNotFoundError("h5fz.read: cannot load the plugin %s (%s); build it or set "
                                    "HDF5_PLUGIN_PATH" % (path, e)) from None
        try:
            version = lib.h5z_fz_reader_version()
        except AttributeError:
            raise RuntimeError("h5fz.read: the plugin %s has no decoding interface (built before it "
                               "existed); rebuild it" % path) from None
        if version < _READER_VERSION:
            raise RuntimeError("h5fz.read: the plugin %s has decoding interface %d, this package needs %d"
                               % (path, version, _READER_VERSION))
        sizes = ctypes.POINTER(ctypes.c_size_t)
        pointers = ctypes.POINTER(ctypes.c_void_p)
        words = ctypes.POINTER(ctypes.c_uint)
        lib.h5z_fz_decode_dataset_batch.argtypes = [ctypes.c_size_t, words, ctypes.c_size_t, pointers, sizes,
                                                    pointers, sizes, sizes, ctypes.c_char_p, ctypes.c_uint,
                                                    ctypes.c_char_p, ctypes.c_size_t]
        lib.h5z_fz_decode_dataset_batch.restype = ctypes.c_int
        lib.h5z_fz_decode_dataset_batch_to_device.argtypes = [ctypes.c_size_t, words, ctypes.c_size_t, pointers,
                                                              sizes, pointers, sizes, sizes, ctypes.c_char_p,
                                                              ctypes.c_size_t]
        lib.h5z_fz_decode_dataset_batch_to_device.restype = ctypes.c_int
        lib.h5z_fz_device_available.restype = ctypes.c_int
        _LIB = lib
    return _LIB


def _normalize(selection, shape):
    """(starts, stops, axes to drop) of a selection of slices (step 1) and integers."""
    if selection is None:
        selection = ()
    if not isinstance(selection, tuple):
        selection = (selection,)
    if any(s is Ellipsis for s in selection):
        at = [i for i, s in enumerate(selection) if s is Ellipsis]
        if len(at) > 1:
            raise IndexError("h5fz.read: at most one Ellipsis")
        k = at[0]
        fill = len(shape) - (len(selection) - 1)
        selection = selection[:k] + (slice(None),) * fill + selection[k + 1:]
    if len(selection) > len(shape):
        raise IndexError("h5fz.read: %d indices for a dataset of rank %d" % (len(selection), len(shape)))
    selection = selection + (slice(None),) * (len(shape) - len(selection))
    starts, stops, dropped = [], [], []
    for axis, (s, n) in enumerate(zip(selection, shape)):
        if isinstance(s, slice):
            start, stop, step = s.indices(n)
            if step != 1:
                raise TypeError("h5fz.read: slices with step 1 only (axis %d has step %d); read and then "
                                "slice the result" % (axis, step))
            starts.append(start)
            stops.append(max(start, stop))
        elif hasattr(s, "__index__"):
            i = int(s)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError("h5fz.read: index %d out of range for axis %d of extent %d" % (int(s), axis, n))
            starts.append(i)
            stops.append(i + 1)
            dropped.append(axis)
        else:
            raise TypeError("h5fz.read: a selection is slices and integers, got %r" % (s,))
    return starts, stops, dropped


def _fz_cd_values(dataset):
    """The filter's stored cd_values when H5Z-FZ is the dataset's only filter
    (its chunks are then decoded here), else None."""
    from . import FILTER_ID
    if dataset.chunks is None:
        return None
    dcpl = dataset.id.get_create_plist()
    if dcpl.get_nfilters() != 1:
        return None
    code, _flags, values, _name = dcpl.get_filter(0)
    return tuple(values) if code == FILTER_ID else None


def _missing_filters(dataset):
    """A sentence naming each filter of the dataset HDF5 cannot find (id and
    name) and where such filters come from, or "" (as `h5fz read` says it)."""
    import h5py
    from . import FILTER_ID
    if dataset.chunks is None:
        return ""
    dcpl = dataset.id.get_create_plist()
    missing, other = [], False
    for i in range(dcpl.get_nfilters()):
        code, _flags, _values, name = dcpl.get_filter(i)
        if h5py.h5z.filter_avail(code):
            continue
        name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        text = "filter %d (%s) is not available" % (code, name or "no name")
        if code == FILTER_ID:
            text += ": set HDF5_PLUGIN_PATH to the folder that holds libH5Zfz.so"
        else:
            other = True
        missing.append(text)
    text = "; ".join(missing)
    if other:
        text += (". HDF5 loads filters from the folders HDF5_PLUGIN_PATH names; many (SZ, SZ3, zfp, Blosc, LZ4, "
                 "Zstd, bitshuffle...) come with hdf5plugin: pip install hdf5plugin, then import hdf5plugin")
    return text


def _variable_length(dtype):
    """Variable-length elements (strings, sequences): h5py gives them as
    objects; their stored chunks hold heap references, which only HDF5 can
    read, so such datasets are read through HDF5."""
    return dtype.hasobject


def _memory_bytes():
    """This machine's memory (0 if unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def _check_size(dataset, region, itemsize):
    """The result's bytes, in exact integers: a selection larger than the
    machine's memory is refused before anything is allocated."""
    nbytes = math.prod(region) * itemsize
    memory = _memory_bytes()
    if nbytes >= 2 ** 63 or (memory and nbytes > memory):
        raise MemoryError("h5fz.read: %s: the selection %s of %d-byte elements is %d bytes, more than this "
                          "machine's memory (%d bytes); read a smaller selection"
                          % (dataset.name, "x".join(str(n) for n in region) or "()", itemsize, nbytes, memory))
    return nbytes


def _device_module(device):
    """None for host memory, else CuPy (device "cuda" or "cuda:N")."""
    if device in (None, "cpu"):
        return None
    if not isinstance(device, str) or not (device == "cuda" or device.startswith("cuda:")):
        raise ValueError("h5fz.read: device is None, 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))
    try:
        import cupy
    except ImportError:
        raise ImportError("h5fz.read(device=%r) returns a CuPy array (PyTorch and JAX take it without a copy "
                          "through DLPack): install CuPy, e.g. pip install cupy-cuda12x" % device) from None
    return cupy


def _chunk_places(starts, stops, shape, chunks):
    """Every chunk the selection touches: its offset, where its part goes in the
    result and comes from in the chunk, and whether the chunk fills a
    contiguous run of the result (then it is decoded straight into it)."""
    rank = len(shape)
    extents = [b - a for a, b in zip(starts, stops)]
    grid = [range(a // c, (b - 1) // c + 1) for a, b, c in zip(starts, stops, chunks)]
    for index in itertools.product(*grid):
        offset = tuple(i * c for i, c in zip(index, chunks))
        dst, src, whole = [], [], True
        for a in range(rank):
            lo = max(starts[a], offset[a])
            hi = min(stops[a], offset[a] + chunks[a])
            dst.append(slice(lo - starts[a], hi - starts[a]))
            src.append(slice(lo - offset[a], hi - offset[a]))
            whole &= hi - lo == chunks[a]
        # The chunk lands contiguously when it is whole and spans the result's
        # full extent in every axis but the first.
        contiguous = whole and all(chunks[a] == extents[a] for a in range(1, rank))
        yield offset, tuple(dst), tuple(src), contiguous


def _read_frame(dsid, offset):
    """(filter mask, stored bytes), or None for a chunk never written."""
    try:
        return dsid.read_direct_chunk(offset)
    except Exception as read_error:
        try:
            info = dsid.get_chunk_info_by_coord(offset)
        except Exception:
            raise read_error from None        # the read's own message says more
        if info.byte_offset is None or info.size == 0:
            return None
        raise


def read(dataset, selection=None, device=None, threads=0):
    """Read ``dataset[selection]`` of an H5Z-FZ dataset many chunks at a time.

    ``dataset``: an h5py Dataset. ``selection``: None (everything), or what
    ``dataset[...]`` takes made of slices with step 1, integers and one
    Ellipsis. The chunks it touches are read as stored (read_direct_chunk)
    and decoded together by the engine: on all cores (``threads``: how many,
    0 = all), or with ``device="cuda"`` on the GPU, into GPU memory, returned
    as a CuPy array (``torch.from_dlpack(a)`` and ``jax.dlpack`` take it
    without a copy). The values are exactly those of ``dataset[selection]``
    (reading through the filter), which is what a dataset that does not use
    H5Z-FZ alone, or has variable-length elements, is read with (uploaded to
    the GPU for ``device="cuda"``). Each frame is checked against the
    dataset's stored parameters as the filter checks it (element type,
    preset, error-bound mode and bound): a chunk the filter refuses raises
    OSError with the filter's message. A selection larger than the machine's
    memory raises MemoryError before anything is allocated.
    """
    import numpy as np
    cupy = _device_module(device)
    shape = tuple(dataset.shape or ())
    starts, stops, dropped = _normalize(selection, shape)
    keep = tuple(0 if a in dropped else slice(None) for a in range(len(shape)))
    region = tuple(b - a for a, b in zip(starts, stops))
    dtype = np.dtype(dataset.dtype)
    if shape:
        _check_size(dataset, region, dtype.itemsize)
    cd_values = _fz_cd_values(dataset)
    if not shape or cd_values is None or _variable_length(dtype) or 0 in region:
        try:
            data = dataset[tuple(slice(a, b) for a, b in zip(starts, stops))] if shape else dataset[()]
        except OSError as e:
            missing = _missing_filters(dataset)
            if missing:
                raise OSError("h5fz.read: %s: %s (%s)" % (dataset.name, missing, e)) from None
            raise
        data = np.asarray(data)[keep] if shape else np.asarray(data)
        if cupy is None:
            return data
        with _cuda_device(cupy, device):
            return cupy.asarray(data)
    lib = _library()
    if cupy is not None and not lib.h5z_fz_device_available():
        raise RuntimeError("h5fz.read(device=%r): the plugin finds no usable CUDA device (or was built "
                           "without CUDA)" % device)
    chunks = tuple(dataset.chunks)
    chunk_bytes = math.prod(chunks) * dtype.itemsize
    cd = (ctypes.c_uint * len(cd_values))(*cd_values)
    xp = cupy if cupy is not None else np
    with _cuda_device(cupy, device):
        out = xp.empty(region, dtype=dtype)
        base = out.data.ptr if cupy is not None else out.ctypes.data
        row_bytes = math.prod(region[1:]) * dtype.itemsize
        fill = dataset.fillvalue
        dsid = dataset.id
        per_group = max(1, _GROUP_BYTES // chunk_bytes)
        places = _chunk_places(starts, stops, shape, chunks)

        def gather():
            """Frames of the next group; chunks stored unfiltered or never
            written are placed at once."""
            group = []
            for offset, dst, src, contiguous in itertools.islice(places, per_group):
                got = _read_frame(dsid, offset)
                if got is None:
                    out[dst] = fill
                    continue
                mask, frame = got
                if mask & 1:
                    # HDF5 stored this chunk without running the filter.
                    raw = np.frombuffer(frame, dtype=dtype, count=math.prod(chunks)).reshape(chunks)
                    out[dst] = xp.asarray(raw[src])
                    continue
                group.append((frame, dst, src, contiguous))
            return group

        def decode(group):
            """Decodes a group; returns the chunks to copy in part."""
            n = len(group)
            frames = (ctypes.c_void_p * n)()
            frame_bytes = (ctypes.c_size_t * n)()
            targets = (ctypes.c_void_p * n)()
            capacities = (ctypes.c_size_t * n)(*([chunk_bytes] * n))
            decoded = (ctypes.c_size_t * n)()
            partial = []
            for i, (frame, dst, src, contiguous) in enumerate(group):
                frames[i] = ctypes.cast(ctypes.c_char_p(frame), ctypes.c_void_p)
                frame_bytes[i] = len(frame)
                if contiguous:
                    targets[i] = base + dst[0].start * row_bytes
                else:
                    scratch = xp.empty(chunks, dtype=dtype)
                    partial.append((scratch, dst, src))
                    targets[i] = scratch.data.ptr if cupy is not None else scratch.ctypes.data
            error = ctypes.create_string_buffer(1024)
            if cupy is None:
                status = lib.h5z_fz_decode_dataset_batch(len(cd), cd, n, frames, frame_bytes, targets, capacities,
                                                         decoded, b"auto", int(threads), error, len(error))
            else:
                status = lib.h5z_fz_decode_dataset_batch_to_device(len(cd), cd, n, frames, frame_bytes, targets,
                                                                   capacities, decoded, error, len(error))
            if status != 0:
                raise OSError("h5fz.read: %s: %s" % (dataset.name, error.value.decode(errors="replace")))
            short = [i for i in range(n) if decoded[i] != chunk_bytes]
            if short:
                raise OSError("h5fz.read: %s: a frame decoded to %d bytes, the chunk holds %d"
                              % (dataset.name, decoded[short[0]], chunk_bytes))
            return partial

        # The next group's frames are read while the engine decodes this one
        # (ctypes lets go of the GIL during the call).
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            group = gather()
            while group:
                decoding = pool.submit(decode, group)
                try:
                    group = gather()
                finally:
                    partial = decoding.result()
                for scratch, dst, src in partial:
                    out[dst] = scratch[src]
        return out[keep]


class _NoDevice:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _cuda_device(cupy, device):
    """The CuPy device context for "cuda:N" (the current device for "cuda")."""
    if cupy is None or device == "cuda":
        return _NoDevice()
    return cupy.cuda.Device(int(device.split(":", 1)[1]))
