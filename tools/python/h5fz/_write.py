"""h5fz.write: the mirror of h5fz.read. The chunks a selection covers are
encoded many at once by the engine (all cores) and stored as they are with
write_direct_chunk, instead of HDF5 handing the filter one chunk at a time.

The encoder is the plugin itself: libH5Zfz.so exports a small C interface
(filter/writer_api.cpp) that encodes chunks under a dataset's stored
parameters into the very frames the filter writes, so h5py, h5dump, netCDF
and h5fz.read read the dataset as if HDF5 had filtered every chunk.

Chunks are built as HDF5 builds them before its filter runs: a chunk the
selection covers whole is the data (an edge chunk padded with the fill
value); a chunk it covers in part is the stored chunk decoded whole (its
padding included; the fill value for a chunk never written, the stored bytes
for one HDF5 stored unfiltered) with the data merged in.

A GPU array (CuPy, or anything with the CUDA array interface or DLPack on a
CUDA device: PyTorch, JAX, Numba; through CuPy, without a copy) is written
from the GPU: its chunks are built in GPU memory (stored chunks to merge into
are decoded there too) and encoded by the GPU that holds it, and only the
frames cross to the host.
"""

import concurrent.futures
import contextlib
import ctypes
import itertools
import math

from ._read import _fz_cd_values, _normalize, _read_frame

# 1: h5z_fz_encode_dataset_batch, h5z_fz_max_frame_bytes; 2: and
# h5z_fz_encode_dataset_batch_from_device (needed for GPU arrays only).
_WRITER_VERSION = 1
_DEVICE_WRITER_VERSION = 2
_LIB = None
# Chunk bytes handed to the encoder at once: enough chunks for every core,
# and a bounded amount of memory (the group's chunks and their frames).
_GROUP_BYTES = 64 << 20


def _library():
    """The plugin loaded for its encoding interface (once per process)."""
    global _LIB
    if _LIB is None:
        from ._read import _library as reader_library
        lib = reader_library()
        try:
            version = lib.h5z_fz_writer_version()
        except AttributeError:
            raise RuntimeError("h5fz.write: the plugin has no encoding interface (built before it existed); "
                               "rebuild it") from None
        if version < _WRITER_VERSION:
            raise RuntimeError("h5fz.write: the plugin has encoding interface %d, this package needs %d"
                               % (version, _WRITER_VERSION))
        sizes = ctypes.POINTER(ctypes.c_size_t)
        pointers = ctypes.POINTER(ctypes.c_void_p)
        words = ctypes.POINTER(ctypes.c_uint)
        lib.h5z_fz_encode_dataset_batch.argtypes = [ctypes.c_size_t, words, ctypes.c_size_t, pointers, sizes,
                                                    pointers, sizes, sizes, ctypes.c_char_p, ctypes.c_uint,
                                                    ctypes.c_char_p, ctypes.c_size_t]
        lib.h5z_fz_encode_dataset_batch.restype = ctypes.c_int
        lib.h5z_fz_max_frame_bytes.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        lib.h5z_fz_max_frame_bytes.restype = ctypes.c_size_t
        if version >= _DEVICE_WRITER_VERSION:
            lib.h5z_fz_encode_dataset_batch_from_device.argtypes = [
                ctypes.c_size_t, words, ctypes.c_size_t, pointers, sizes, pointers, sizes, sizes, ctypes.c_char_p,
                ctypes.c_size_t]
            lib.h5z_fz_encode_dataset_batch_from_device.restype = ctypes.c_int
        lib.h5fz_writer_version = version
        _LIB = lib
    return _LIB


def _decode_into(dataset, cd, cd_count, stored, chunk_bytes, threads, on_gpu):
    """Decodes the stored frames of `stored` ((chunk array, frame) pairs)
    into their arrays (NumPy, or CuPy when `on_gpu`), checked against the
    dataset's cd_values as the filter checks them."""
    if not stored:
        return
    from ._read import _library as reader_library
    lib = reader_library()
    n = len(stored)
    keep = [ctypes.create_string_buffer(frame, len(frame)) for _, frame in stored]
    decoded = (ctypes.c_size_t * n)()
    error = ctypes.create_string_buffer(1024)
    frames = (ctypes.c_void_p * n)(*[ctypes.addressof(k) for k in keep])
    frame_bytes = (ctypes.c_size_t * n)(*[len(frame) for _, frame in stored])
    targets = (ctypes.c_void_p * n)(*[chunk.data.ptr if on_gpu else chunk.ctypes.data for chunk, _ in stored])
    capacities = (ctypes.c_size_t * n)(*([chunk_bytes] * n))
    if on_gpu:
        status = lib.h5z_fz_decode_dataset_batch_to_device(cd_count, cd, n, frames, frame_bytes, targets, capacities,
                                                           decoded, error, len(error))
    else:
        status = lib.h5z_fz_decode_dataset_batch(cd_count, cd, n, frames, frame_bytes, targets, capacities, decoded,
                                                 b"cpu", threads, error, len(error))
    if status != 0:
        raise OSError("h5fz.write: %s: a stored chunk to merge into: %s"
                      % (dataset.name, error.value.decode(errors="replace")))
    if any(d != chunk_bytes for d in decoded):
        raise OSError("h5fz.write: %s: a stored chunk decodes to %d bytes, not %d"
                      % (dataset.name, min(decoded), chunk_bytes))


def _gpu_array(data):
    """CuPy's view of `data` when it lives in GPU memory (the CUDA array
    interface, or DLPack on a CUDA device), else None."""
    import numpy as np
    if isinstance(data, np.ndarray):
        return None
    dlpack_device = getattr(data, "__dlpack_device__", None)
    on_cuda = hasattr(data, "__cuda_array_interface__")
    if not on_cuda and dlpack_device is not None:
        try:
            on_cuda = dlpack_device()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
        except Exception:
            on_cuda = False
    if not on_cuda:
        return None
    try:
        import cupy
    except ImportError:
        raise ImportError("h5fz.write: a GPU array is written from the GPU through CuPy (PyTorch, JAX and Numba "
                          "arrays without a copy): install CuPy, e.g. pip install cupy-cuda12x; or copy it to "
                          "the host first (x.cpu().numpy())") from None
    if hasattr(data, "__cuda_array_interface__"):
        return cupy.asarray(data)
    return cupy.from_dlpack(data)


def _engine_device(device):
    """The engine's device string for host data."""
    if device is None:
        return "auto"
    if not isinstance(device, str) or not (device in ("auto", "cpu", "cuda") or device.startswith(("cuda:",
                                                                                                   "auto:"))):
        raise ValueError("h5fz.write: device is None, 'auto', 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))
    return device


def write(dataset, data, selection=None, threads=0, device=None):
    """Write ``data`` to ``dataset[selection]`` of an H5Z-FZ dataset many
    chunks at a time.

    ``dataset``: an h5py Dataset created with the filter as its only filter
    (``h5fz.FZ(...)`` or ``compression=32850``). ``data``: anything NumPy
    takes as an array of the selection's shape (or one that broadcasts to
    it), converted to the dataset's type as h5py converts it; or a GPU array
    (CuPy, or the CUDA array interface or DLPack: PyTorch, JAX, Numba), which
    is encoded on its GPU so that only the frames cross to the host (this
    needs CuPy). ``selection``: None (everything), or slices with step 1,
    integers and one Ellipsis; chunks it covers in part are merged with what
    they hold (see the module). ``threads``: CPU threads, 0 = all.
    ``device``: where host data is encoded: None or "auto" (the GPU for large
    chunks when one is usable, else all cores), "cpu", "cuda" or "cuda:N"; a
    GPU array is encoded on its own GPU, or with "cpu" copied to the host a
    group of chunks at a time and encoded there.
    The chunks are encoded by the plugin into the frames the filter writes
    for them and stored with write_direct_chunk: every reader reads what
    ``dataset[selection] = data`` would have stored. Every chunk is checked
    before the first is written; an encoding error raises OSError naming the
    dataset, and chunks of groups already stored stay written.
    """
    import numpy as np
    engine_device = _engine_device(device)
    gpu_values = _gpu_array(data)
    cd_values = _fz_cd_values(dataset)
    if cd_values is None:
        raise TypeError("h5fz.write: %s is not a chunked dataset with H5Z-FZ as its only filter; write it "
                        "with dataset[...] = data" % dataset.name)
    dtype = np.dtype(dataset.dtype)
    if dtype.hasobject or dtype.kind in "OUSV":
        raise TypeError("h5fz.write: %s has elements of type %s, which the filter leaves unfiltered"
                        % (dataset.name, dtype))
    shape = tuple(dataset.shape)
    chunks = tuple(dataset.chunks)
    try:
        starts, stops, dropped = _normalize(selection, shape)
    except (IndexError, TypeError) as e:  # the reader's words for the same rule
        raise type(e)(str(e).replace("h5fz.read", "h5fz.write")) from None
    region = tuple(b - a for a, b in zip(starts, stops))
    kept_shape = tuple(n for axis, n in enumerate(region) if axis not in dropped)
    dtype_native = dtype.isnative or dtype.itemsize == 1
    # On the GPU unless asked for the CPU (or the dataset's byte order is one
    # CuPy has no arrays of: its chunks are then built on the host).
    on_gpu = gpu_values is not None and engine_device != "cpu" and dtype_native
    if on_gpu and engine_device.startswith("cuda:") and int(engine_device.split(":", 1)[1]) != gpu_values.device.id:
        raise ValueError("h5fz.write: the data is on CUDA device %d, device=%r names another"
                         % (gpu_values.device.id, device))
    xp = np
    if gpu_values is not None:
        import cupy
        xp = cupy
        values = gpu_values
    else:
        values = np.asarray(data)
    try:
        values = xp.broadcast_to(values, kept_shape)
    except ValueError:
        raise ValueError("h5fz.write: data of shape %s does not fit the selection's shape %s"
                         % (values.shape, kept_shape)) from None
    values = values.reshape(region)  # (converted to the dataset's type a chunk's part at a time)
    if 0 in region:
        return
    lib = _library()  # (the reader's library too: one plugin)
    if on_gpu and lib.h5fz_writer_version < _DEVICE_WRITER_VERSION:
        raise RuntimeError("h5fz.write: the plugin cannot encode from GPU memory (encoding interface %d, GPU "
                           "arrays need %d); rebuild it" % (lib.h5fz_writer_version, _DEVICE_WRITER_VERSION))
    if on_gpu and not lib.h5z_fz_device_available():
        raise RuntimeError("h5fz.write: the data is in GPU memory, and the plugin finds no usable CUDA device "
                           "(or was built without CUDA); pass device='cpu' to encode it on the host")
    cd = (ctypes.c_uint * len(cd_values))(*cd_values)
    chunk_elements = math.prod(chunks)
    chunk_bytes = chunk_elements * dtype.itemsize
    frame_capacity = lib.h5z_fz_max_frame_bytes(chunk_bytes, len(chunks))
    if frame_capacity == 0:
        raise OSError("h5fz.write: %s: no frame size for chunks of %d bytes" % (dataset.name, chunk_bytes))
    fill = dataset.fillvalue
    per_group = max(1, _GROUP_BYTES // chunk_bytes)
    grid = [range(a // c, (b - 1) // c + 1) for a, b, c in zip(starts, stops, chunks)]
    places = (tuple(i * c for i, c in zip(index, chunks)) for index in itertools.product(*grid))
    dsid = dataset.id

    def part_of(lo, hi):
        """The data of box [lo, hi): a host array, or one in GPU memory when
        the chunks are built there."""
        part = values[tuple(slice(l - a, h - a) for l, h, a in zip(lo, hi, starts))]
        if gpu_values is not None and not on_gpu:
            part = xp.asnumpy(part)
        return part.astype(dtype, copy=False)

    cx = xp if on_gpu else np  # where the chunks are built

    def build(group):
        """The group's chunks as HDF5 would hand them to the filter."""
        buffers, merges, stored = [], [], []
        for offset in group:
            lo = [max(a, o) for a, o in zip(starts, offset)]
            hi = [min(b, o + c) for b, o, c in zip(stops, offset, chunks)]
            part = part_of(lo, hi)
            inside = tuple(slice(l - o, h - o) for l, h, o in zip(lo, hi, offset))
            extent = [min(c, n - o) for c, n, o in zip(chunks, shape, offset)]
            if part.shape == chunks:
                chunk = cx.ascontiguousarray(part)
            elif all(l == o and h - o == e for l, h, o, e in zip(lo, hi, offset, extent)):
                # Every element of an edge chunk: HDF5 pads the rest with the fill value.
                chunk = cx.full(chunks, fill, dtype=dtype)
                chunk[inside] = part
            else:
                # Part of a chunk: merged into what is stored, as HDF5 merges
                # (the chunk decoded whole, its padding included, and encoded
                # again; the fill value where it was never written).
                got = _read_frame(dsid, offset)
                if got is None:
                    chunk = cx.full(chunks, fill, dtype=dtype)
                elif got[0] & 1:  # stored unfiltered by HDF5: its bytes are the chunk
                    chunk = cx.array(np.frombuffer(got[1], dtype=dtype, count=chunk_elements).reshape(chunks))
                else:
                    chunk = cx.empty(chunks, dtype=dtype)
                    stored.append((chunk, got[1]))
                merges.append((chunk, inside, part))
            buffers.append(chunk)
        _decode_into(dataset, cd, len(cd_values), stored, chunk_bytes, threads, on_gpu)
        for chunk, inside, part in merges:
            chunk[inside] = part
        return buffers

    # Two rooms for frames, reused group after group (one is being stored
    # while the next group is encoded into the other): fresh memory for every
    # group would cost its page faults each time. From a GPU array the rooms
    # are page-locked (CuPy's pinned memory), so the frames come down at
    # PCIe speed straight into them.
    rooms = []

    def new_room(nbytes):
        if on_gpu:
            return np.frombuffer(xp.cuda.alloc_pinned_memory(nbytes), dtype=np.uint8, count=nbytes)
        return np.empty(nbytes, dtype=np.uint8)  # not zeroed: only frames are read

    def encode(buffers, which):
        """The buffers' frames (views of room `which`), as the filter writes them."""
        n = len(buffers)
        while len(rooms) <= which:
            rooms.append(new_room(per_group * frame_capacity))
        room = rooms[which]
        base = room.ctypes.data
        encoded = (ctypes.c_size_t * n)()
        error = ctypes.create_string_buffer(1024)
        frames = (ctypes.c_void_p * n)(*[base + i * frame_capacity for i in range(n)])
        sizes = (ctypes.c_size_t * n)(*([chunk_bytes] * n))
        capacities = (ctypes.c_size_t * n)(*([frame_capacity] * n))
        if on_gpu:
            # (CuPy's own stream has built the chunks: the engine's streams
            # must see them.)
            xp.cuda.get_current_stream().synchronize()
            status = lib.h5z_fz_encode_dataset_batch_from_device(
                len(cd_values), cd, n, (ctypes.c_void_p * n)(*[b.data.ptr for b in buffers]), sizes, frames,
                capacities, encoded, error, len(error))
        else:
            status = lib.h5z_fz_encode_dataset_batch(
                len(cd_values), cd, n, (ctypes.c_void_p * n)(*[b.ctypes.data for b in buffers]), sizes, frames,
                capacities, encoded, engine_device.encode(), threads, error, len(error))
        if status != 0:
            raise OSError("h5fz.write: %s: %s" % (dataset.name, error.value.decode(errors="replace")))
        return [room[i * frame_capacity:i * frame_capacity + length] for i, length in enumerate(encoded)]

    def store(group, frames):
        for offset, frame in zip(group, frames):
            dsid.write_direct_chunk(offset, frame, filter_mask=0)

    # One group is stored while the next is built and encoded (the encoder
    # releases the GIL): at most two groups of frames and one of chunks. GPU
    # arrays are worked on under their own device.
    on_device = gpu_values.device if gpu_values is not None else contextlib.nullcontext()
    with on_device, concurrent.futures.ThreadPoolExecutor(max_workers=1) as writer:
        pending = None
        for which in itertools.cycle((0, 1)):
            group = list(itertools.islice(places, per_group))
            if not group:
                break
            frames = encode(build(group), which)
            if pending is not None:
                pending.result()
            pending = writer.submit(store, group, frames)
        if pending is not None:
            pending.result()
