"""Chunks to the HDF5 filter's frames and back without HDF5: what the Zarr
codecs (_zarr.py for numcodecs / Zarr v2, _zarr3.py for zarr-python 3) share.

The stored cd_values come from the plugin (``h5z_fz_chunk_cd_values``: the
words set_local would write for a dataset of that element type, chunk shape
and fill value), so a chunk's frame is the filter's for the same chunk.
Many chunks go to the engine in one call (all cores, or the GPU). Sizes read
from a frame come from its checked header (``h5z_fz_frame_decoded_bytes``)
and are checked against what the caller expects.
"""

import ctypes
import sys

import numpy as np

from ._options import compression_opts as _compression_opts

CODEC_ID = "h5fz"
# The plugin interfaces needed here (h5z_fz_chunk_cd_values,
# h5z_fz_frame_decoded_bytes).
_WRITER_VERSION = 3
_READER_VERSION = 3
_LIB = None
_MAX_STORED_WORDS = 64  # fixed words, 32 chunk dims, tuning words: always enough


def _library():
    """The plugin with the calls made here (once per process)."""
    global _LIB
    if _LIB is None:
        from ._write import _library as writer_library
        lib = writer_library()
        if lib.h5fz_writer_version < _WRITER_VERSION or lib.h5z_fz_reader_version() < _READER_VERSION:
            raise RuntimeError("h5fz: the plugin has interfaces %d (writing) and %d (reading), the Zarr codecs "
                               "need %d and %d; rebuild it" % (lib.h5fz_writer_version, lib.h5z_fz_reader_version(),
                                                               _WRITER_VERSION, _READER_VERSION))
        sizes = ctypes.POINTER(ctypes.c_size_t)
        pointers = ctypes.POINTER(ctypes.c_void_p)
        words = ctypes.POINTER(ctypes.c_uint)
        lib.h5z_fz_chunk_cd_values.argtypes = [
            ctypes.c_size_t, words, ctypes.c_char, ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_void_p, words, ctypes.c_size_t, sizes, ctypes.c_char_p,
            ctypes.c_size_t]
        lib.h5z_fz_chunk_cd_values.restype = ctypes.c_int
        lib.h5z_fz_frame_decoded_bytes.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                   ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_char_p,
                                                   ctypes.c_size_t]
        lib.h5z_fz_frame_decoded_bytes.restype = ctypes.c_int
        lib.h5z_fz_decode_batch.argtypes = [ctypes.c_size_t, pointers, sizes, pointers, sizes, sizes,
                                            ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
        lib.h5z_fz_decode_batch.restype = ctypes.c_int
        lib.h5z_fz_decode_batch_to_device.argtypes = [ctypes.c_size_t, pointers, sizes, pointers, sizes, sizes,
                                                      ctypes.c_char_p, ctypes.c_size_t]
        lib.h5z_fz_decode_batch_to_device.restype = ctypes.c_int
        _LIB = lib
    return _LIB


def _message(error):
    return error.value.decode(errors="replace")


def user_words(who, preset=None, abs=None, noa=None, rel=None, missing=None, tuning=None, alpha=None, beta=None,
               compression_opts=None):
    """The user layout's words (compression_opts) from a codec's choices:
    the same keywords as h5fz.FZ, or the words themselves."""
    chosen = [name for name, value in (("preset", preset), ("abs", abs), ("noa", noa), ("rel", rel),
                                       ("missing", missing), ("tuning", tuning), ("alpha", alpha),
                                       ("beta", beta)) if value is not None]
    if compression_opts is not None:
        if chosen:
            raise ValueError("%s: give compression_opts or the choices (%s), not both" % (who, ", ".join(chosen)))
        words = [int(w) for w in compression_opts]
        if any(w < 0 or w > 0xFFFFFFFF for w in words):
            raise ValueError("%s: compression_opts are 32-bit unsigned words, got %r" % (who, words))
        return words
    given = [(m, b) for m, b in (("abs", abs), ("noa", noa), ("rel", rel)) if b is not None]
    if len(given) > 1:
        raise ValueError("%s: give one of abs=, noa=, rel= (got %s)" % (who, ", ".join(m for m, _ in given)))
    mode, bound = given[0] if given else ("abs", None)
    return list(_compression_opts(preset or "lossless", mode, bound, missing, None, tuning, alpha, beta))


def fill_element(who, fill_value, dtype):
    """The fill value as one element of `dtype` (an array of one), or None."""
    if fill_value is None:
        return None
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        value = float(fill_value)
        if not value.is_integer() or not info.min <= value <= info.max:
            raise ValueError("%s: fill_value %r is not a %s value" % (who, fill_value, dtype))
        return np.array([int(value)], dtype=dtype)
    return np.array([fill_value], dtype=dtype)  # rounded to the type, as HDF5 stores it


_STORED = {}  # stored_words' answers: a few per array, tiny


def check_device(who, device):
    """Where chunks are encoded and decoded: a string the engine takes."""
    if not isinstance(device, str):
        raise TypeError("%s: device is a string ('auto', 'cpu', 'cuda', 'cuda:N'), got %r" % (who, device))
    return device


def stored_words(who, words, dtype, shape, fill):
    """The stored cd_values of chunks of this element type and shape under
    the user's words and fill element (None: no fill value), as set_local
    writes them for an HDF5 dataset: a ctypes array, computed once per
    process for each choice (chunks of an array share it; a codec's batches
    ask again and again)."""
    if dtype.kind not in "fiu":
        raise TypeError("%s: %s elements cannot be encoded: it takes numbers (float16/32/64, integers of 1-8 "
                        "bytes)" % (who, dtype))
    key = (tuple(words), dtype.str, tuple(shape), None if fill is None else fill.tobytes())
    found = _STORED.get(key)
    if found is None:
        found = _stored_words_now(who, words, dtype, shape, fill)
        _STORED[key] = found
    return found


def _stored_words_now(who, words, dtype, shape, fill):
    lib = _library()
    user = (ctypes.c_uint * max(1, len(words)))(*words)
    dims = (ctypes.c_ulonglong * len(shape))(*shape)
    stored = (ctypes.c_uint * _MAX_STORED_WORDS)()
    count = ctypes.c_size_t(0)
    error = ctypes.create_string_buffer(1024)
    big = dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")
    status = lib.h5z_fz_chunk_cd_values(len(words), user, dtype.kind.encode(), dtype.itemsize, 1 if big else 0,
                                        len(shape), dims, None if fill is None else fill.ctypes.data, stored,
                                        _MAX_STORED_WORDS, ctypes.byref(count), error, len(error))
    if status != 0:
        raise ValueError("%s: %s" % (who, _message(error)))
    return (ctypes.c_uint * count.value)(*stored[:count.value])


def on_gpu(array):
    """Whether an array lives in GPU memory (CuPy and anything with the CUDA array interface)."""
    return hasattr(array, "__cuda_array_interface__")


def encode_chunks(who, stored, chunks, device="auto", threads=0):
    """Frames (bytes) of host chunks (C-contiguous arrays, all of the shape
    and type `stored` was made for), encoded together."""
    return _encode(who, stored, chunks, "", "h5z_fz_encode_dataset_batch", (device.encode(), threads))


def encode_device_chunks(who, stored, chunks):
    """Frames (bytes) of chunks in GPU memory (C-contiguous CuPy arrays, all
    of the shape and type `stored` was made for), encoded together on their
    GPU: only the frames cross to the host."""
    if chunks and not _library().h5z_fz_device_available():
        raise RuntimeError("%s: the chunks are in GPU memory, but this plugin has no usable GPU (a build "
                           "without CUDA, or no device): use zarr's CPU buffers" % who)
    return _encode(who, stored, chunks, " on the GPU", "h5z_fz_encode_dataset_batch_from_device", ())


def _encode(who, stored, chunks, where, function, placement):
    """The frames of `chunks` through the plugin's `function` (its
    arguments: the stored words, the chunks, one room of
    h5z_fz_max_frame_bytes a chunk, `placement` (device and threads, for
    host chunks), the error buffer), cut from the rooms."""
    n = len(chunks)
    if n == 0:
        return []
    lib = _library()
    capacity = lib.h5z_fz_max_frame_bytes(chunks[0].nbytes, max(1, chunks[0].ndim))
    if capacity == 0:
        raise ValueError("%s: no frame size for a chunk of %d bytes" % (who, chunks[0].nbytes))
    room = np.empty(n * capacity, dtype=np.uint8)
    encoded = (ctypes.c_size_t * n)()
    error = ctypes.create_string_buffer(1024)
    addresses = [c.data.ptr if on_gpu(c) else c.ctypes.data for c in chunks]
    status = getattr(lib, function)(
        len(stored), stored, n, (ctypes.c_void_p * n)(*addresses), (ctypes.c_size_t * n)(*[c.nbytes for c in chunks]),
        (ctypes.c_void_p * n)(*[room.ctypes.data + i * capacity for i in range(n)]),
        (ctypes.c_size_t * n)(*([capacity] * n)), encoded, *placement, error, len(error))
    if status != 0:
        raise ValueError("%s: encoding %d chunk(s) of %s %s%s: %s"
                         % (who, n, chunks[0].shape, chunks[0].dtype, where, _message(error)))
    return [room[i * capacity:i * capacity + encoded[i]].tobytes() for i in range(n)]


def decoded_bytes(who, frame):
    """The bytes a frame (a uint8 array) decodes to, from its checked header."""
    lib = _library()
    error = ctypes.create_string_buffer(1024)
    size = ctypes.c_ulonglong(0)
    if lib.h5z_fz_frame_decoded_bytes(frame.ctypes.data, frame.nbytes, ctypes.byref(size), error, len(error)):
        raise ValueError("%s: not a frame it can decode: %s" % (who, _message(error)))
    return size.value


def decode_frames(who, frames, outputs, device="auto", threads=0):
    """Frames (uint8 arrays in host memory) into outputs (writable uint8
    arrays of exactly each frame's decoded size), decoded together; outputs
    that are CuPy arrays (GPU memory) are decoded on their GPU."""
    n = len(frames)
    if n == 0:
        return
    for i, (frame, out) in enumerate(zip(frames, outputs)):
        size = decoded_bytes(who, frame)
        if size != out.nbytes:
            raise ValueError("%s: frame %d decodes to %d bytes, its chunk holds %d" % (who, i, size, out.nbytes))
    lib = _library()
    decoded = (ctypes.c_size_t * n)()
    error = ctypes.create_string_buffer(1024)
    frame_pointers = (ctypes.c_void_p * n)(*[f.ctypes.data for f in frames])
    frame_sizes = (ctypes.c_size_t * n)(*[f.nbytes for f in frames])
    sizes = (ctypes.c_size_t * n)(*[o.nbytes for o in outputs])
    gpu = [on_gpu(o) for o in outputs]
    if any(gpu):
        if not all(gpu):
            raise ValueError("%s: a batch decodes into host or GPU memory, not both" % who)
        if not lib.h5z_fz_device_available():
            raise RuntimeError("%s: GPU buffers asked for, but this plugin has no usable GPU (a build without "
                               "CUDA, or no device): use zarr's CPU buffers" % who)
        status = lib.h5z_fz_decode_batch_to_device(
            n, frame_pointers, frame_sizes, (ctypes.c_void_p * n)(*[o.data.ptr for o in outputs]), sizes, decoded,
            error, len(error))
    else:
        status = lib.h5z_fz_decode_batch(
            n, frame_pointers, frame_sizes, (ctypes.c_void_p * n)(*[o.ctypes.data for o in outputs]), sizes,
            decoded, device.encode(), threads, error, len(error))
    if status != 0:
        raise ValueError("%s: decoding: %s" % (who, _message(error)))
    for i, out in enumerate(outputs):
        if decoded[i] != out.nbytes:
            raise ValueError("%s: frame %d decoded to %d bytes, its header says %d" % (who, i, decoded[i], out.nbytes))
