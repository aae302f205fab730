"""h5fz.FZCodec: the HDF5 filter's frames as a numcodecs codec, for Zarr v2
(issue 33).

A chunk of a Zarr array is encoded into exactly the frame the HDF5 filter
writes for the same chunk of an HDF5 dataset with the same compression_opts,
element type and fill value: the codec asks the plugin for the stored
cd_values set_local would write for that chunk shape
(``h5z_fz_chunk_cd_values``) and encodes under them
(``h5z_fz_encode_dataset_batch``). So the bounds, presets, missing-value and
fill-value rules are the filter's, and a frame moves between the two formats
as it is. Decoding reads the decoded size from the frame's checked header
(``h5z_fz_frame_decoded_bytes``); nothing read from a frame is trusted.

Needs numcodecs (``pip install numcodecs``); the codec registers itself with
numcodecs when this module is imported (``h5fz.FZCodec`` imports it), and
through the ``numcodecs.codecs`` entry point when the package is installed.

    import zarr, h5fz
    z = zarr.open_array("t.zarr", mode="w", shape=a.shape, chunks=(64, 64, 64), dtype=a.dtype,
                        compressor=h5fz.FZCodec(preset="fzgpu", noa=1e-3))
    z[...] = a
"""

import ctypes
import sys

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ensure_ndarray
from numcodecs.registry import register_codec

from ._options import compression_opts as _compression_opts

CODEC_ID = "h5fz"
# The plugin interfaces this codec needs (h5z_fz_chunk_cd_values,
# h5z_fz_frame_decoded_bytes).
_WRITER_VERSION = 3
_READER_VERSION = 3
_LIB = None
_MAX_STORED_WORDS = 64  # fixed words, 32 chunk dims, tuning words: always enough


def _library():
    """The plugin with the calls the codec makes (once per process)."""
    global _LIB
    if _LIB is None:
        from ._write import _library as writer_library
        lib = writer_library()
        if lib.h5fz_writer_version < _WRITER_VERSION or lib.h5z_fz_reader_version() < _READER_VERSION:
            raise RuntimeError("h5fz.FZCodec: the plugin has interfaces %d (writing) and %d (reading), the codec "
                               "needs %d and %d; rebuild it" % (lib.h5fz_writer_version, lib.h5z_fz_reader_version(),
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
        _LIB = lib
    return _LIB


def _error_buffer():
    return ctypes.create_string_buffer(1024)


def _message(error):
    return error.value.decode(errors="replace")


class FZCodec(Codec):
    """H5Z-FZ as a numcodecs codec (Zarr v2 ``compressor=``).

    The same choices as :class:`h5fz.FZ`: ``preset`` and one of ``abs=``,
    ``noa=``, ``rel=`` (none: a lossless preset), ``missing``, ``tuning``,
    ``alpha``, ``beta``; or ``compression_opts``, the filter's words
    themselves (what ``get_config`` records). ``fill_value``: the array's
    fill value, as an HDF5 dataset's user-defined fill value counts (kept
    exactly, out of NOA's range): give the Zarr array's, or None.
    ``device`` ("auto", "cpu", "cuda", "cuda:N") and ``threads`` (0 = all
    cores) say where chunks are encoded and decoded; they are not part of
    the stored configuration.
    """

    codec_id = CODEC_ID

    def __init__(self, preset=None, abs=None, noa=None, rel=None, missing=None, tuning=None, alpha=None,
                 beta=None, compression_opts=None, fill_value=None, device="auto", threads=0):
        chosen = [name for name, value in (("preset", preset), ("abs", abs), ("noa", noa), ("rel", rel),
                                           ("missing", missing), ("tuning", tuning), ("alpha", alpha),
                                           ("beta", beta)) if value is not None]
        if compression_opts is not None:
            if chosen:
                raise ValueError("h5fz.FZCodec: give compression_opts or the choices (%s), not both"
                                 % ", ".join(chosen))
            words = [int(w) for w in compression_opts]
            if any(w < 0 or w > 0xFFFFFFFF for w in words):
                raise ValueError("h5fz.FZCodec: compression_opts are 32-bit unsigned words, got %r" % (words,))
        else:
            given = [(m, b) for m, b in (("abs", abs), ("noa", noa), ("rel", rel)) if b is not None]
            if len(given) > 1:
                raise ValueError("h5fz.FZCodec: give one of abs=, noa=, rel= (got %s)"
                                 % ", ".join(m for m, _ in given))
            mode, bound = given[0] if given else ("abs", None)
            words = list(_compression_opts(preset or "lossless", mode, bound, missing, None, tuning, alpha, beta))
        if fill_value is not None and not isinstance(fill_value, (int, float, np.integer, np.floating)):
            raise TypeError("h5fz.FZCodec: fill_value is a number or None, got %r" % (fill_value,))
        if not isinstance(device, str):
            raise TypeError("h5fz.FZCodec: device is a string ('auto', 'cpu', 'cuda', 'cuda:N'), got %r"
                            % (device,))
        self.compression_opts = words
        self.fill_value = fill_value
        self.device = device
        self.threads = int(threads)
        self._stored = {}  # (dtype, chunk shape) -> the stored cd_values
        # The words are checked now, as HDF5 checks them at dataset
        # creation: a bad choice fails here, not at the first chunk.
        self._stored_words(np.dtype("f4"), (1,))

    def get_config(self):
        return {"id": self.codec_id, "compression_opts": list(self.compression_opts), "fill_value": self.fill_value}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("id", None)
        return cls(**config)

    def __repr__(self):
        return "h5fz.FZCodec(compression_opts=%r, fill_value=%r)" % (self.compression_opts, self.fill_value)

    def _stored_words(self, dtype, shape):
        """The stored cd_values of chunks of this type and shape, as set_local writes them."""
        key = (dtype.str, tuple(shape))
        words = self._stored.get(key)
        if words is not None:
            return words
        if dtype.kind not in "fiu":
            raise TypeError("h5fz.FZCodec: %s elements cannot be encoded: it takes numbers (float16/32/64, "
                            "integers of 1-8 bytes)" % dtype)
        lib = _library()
        user = (ctypes.c_uint * max(1, len(self.compression_opts)))(*self.compression_opts)
        dims = (ctypes.c_ulonglong * len(shape))(*shape)
        fill = None
        if self.fill_value is not None:
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                value = float(self.fill_value)
                if not value.is_integer() or not info.min <= value <= info.max:
                    raise ValueError("h5fz.FZCodec: fill_value %r is not a %s value" % (self.fill_value, dtype))
                fill = np.array([int(value)], dtype=dtype)
            else:
                fill = np.array([self.fill_value], dtype=dtype)  # rounded to the type, as HDF5 stores it
        stored = (ctypes.c_uint * _MAX_STORED_WORDS)()
        count = ctypes.c_size_t(0)
        error = _error_buffer()
        big = dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")
        status = lib.h5z_fz_chunk_cd_values(len(self.compression_opts), user, dtype.kind.encode(), dtype.itemsize,
                                            1 if big else 0, len(shape), dims,
                                            None if fill is None else fill.ctypes.data, stored, _MAX_STORED_WORDS,
                                            ctypes.byref(count), error, len(error))
        if status != 0:
            raise ValueError("h5fz.FZCodec: %s" % _message(error))
        words = (ctypes.c_uint * count.value)(*stored[:count.value])
        self._stored[key] = words
        return words

    def encode(self, buf):
        """A chunk (an array of numbers, its shape the chunk's) into its frame (bytes)."""
        chunk = ensure_ndarray(buf)
        if not chunk.flags.c_contiguous:
            chunk = np.ascontiguousarray(chunk)
        shape = chunk.shape if chunk.ndim > 0 else (1,)
        words = self._stored_words(chunk.dtype, shape)
        lib = _library()
        capacity = lib.h5z_fz_max_frame_bytes(chunk.nbytes, len(shape))
        if capacity == 0:
            raise ValueError("h5fz.FZCodec: no frame size for a chunk of %d bytes" % chunk.nbytes)
        frame = np.empty(capacity, dtype=np.uint8)
        encoded = (ctypes.c_size_t * 1)()
        error = _error_buffer()
        status = lib.h5z_fz_encode_dataset_batch(
            len(words), words, 1, (ctypes.c_void_p * 1)(chunk.ctypes.data), (ctypes.c_size_t * 1)(chunk.nbytes),
            (ctypes.c_void_p * 1)(frame.ctypes.data), (ctypes.c_size_t * 1)(capacity), encoded,
            self.device.encode(), self.threads, error, len(error))
        if status != 0:
            raise ValueError("h5fz.FZCodec: encoding a chunk of %s %s: %s" % (shape, chunk.dtype, _message(error)))
        return frame[:encoded[0]].tobytes()

    def decode(self, buf, out=None):
        """A frame into the chunk's bytes (into ``out`` when given: exactly the chunk's size)."""
        frame = ensure_contiguous_ndarray(buf).view(np.uint8).reshape(-1)
        lib = _library()
        error = _error_buffer()
        size = ctypes.c_ulonglong(0)
        if lib.h5z_fz_frame_decoded_bytes(frame.ctypes.data, frame.nbytes, ctypes.byref(size), error, len(error)):
            raise ValueError("h5fz.FZCodec: not a frame it can decode: %s" % _message(error))
        if out is not None:
            target = ensure_contiguous_ndarray(out).view(np.uint8).reshape(-1)
            if target.nbytes != size.value:
                raise ValueError("h5fz.FZCodec: the frame decodes to %d bytes, the output holds %d"
                                 % (size.value, target.nbytes))
        else:
            target = np.empty(size.value, dtype=np.uint8)
        decoded = (ctypes.c_size_t * 1)()
        status = lib.h5z_fz_decode_batch(
            1, (ctypes.c_void_p * 1)(frame.ctypes.data), (ctypes.c_size_t * 1)(frame.nbytes),
            (ctypes.c_void_p * 1)(target.ctypes.data), (ctypes.c_size_t * 1)(target.nbytes), decoded,
            self.device.encode(), self.threads, error, len(error))
        if status != 0:
            raise ValueError("h5fz.FZCodec: decoding a frame: %s" % _message(error))
        if decoded[0] != size.value:
            raise ValueError("h5fz.FZCodec: the frame decoded to %d bytes, its header says %d"
                             % (decoded[0], size.value))
        return out if out is not None else target


register_codec(FZCodec)
