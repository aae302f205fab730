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
(``h5z_fz_frame_decoded_bytes``); nothing read from a frame is trusted. The
plugin calls are _chunk_codec's, which the zarr-python 3 codec shares.

Needs numcodecs (``pip install numcodecs``); the codec registers itself with
numcodecs when this module is imported (``h5fz.FZCodec`` imports it), and
through the ``numcodecs.codecs`` entry point when the package is installed.

    import zarr, h5fz
    z = zarr.open_array("t.zarr", mode="w", shape=a.shape, chunks=(64, 64, 64), dtype=a.dtype,
                        compressor=h5fz.FZCodec(preset="fzgpu", noa=1e-3))
    z[...] = a
"""

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ensure_ndarray
from numcodecs.registry import register_codec

from . import _chunk_codec as core

CODEC_ID = core.CODEC_ID
_WHO = "h5fz.FZCodec"


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
        words = core.user_words(_WHO, preset, abs, noa, rel, missing, tuning, alpha, beta, compression_opts)
        if fill_value is not None and not isinstance(fill_value, (int, float, np.integer, np.floating)):
            raise TypeError("%s: fill_value is a number or None, got %r" % (_WHO, fill_value))
        self.compression_opts = words
        self.fill_value = fill_value
        self.device = core.check_device(_WHO, device)
        self.threads = int(threads)
        # The words are checked now, as HDF5 checks them at dataset
        # creation: a bad choice fails here, not at the first chunk.
        core.stored_words(_WHO, words, np.dtype("f4"), (1,), None)

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
        fill = core.fill_element(_WHO, self.fill_value, dtype)
        return core.stored_words(_WHO, self.compression_opts, dtype, shape, fill)

    def encode(self, buf):
        """A chunk (an array of numbers, its shape the chunk's) into its frame (bytes)."""
        chunk = ensure_ndarray(buf)
        if not chunk.flags.c_contiguous:
            chunk = np.ascontiguousarray(chunk)
        if chunk.ndim == 0:
            chunk = chunk.reshape(1)
        stored = self._stored_words(chunk.dtype, chunk.shape)
        return core.encode_chunks(_WHO, stored, [chunk], self.device, self.threads)[0]

    def decode(self, buf, out=None):
        """A frame into the chunk's bytes (into ``out`` when given: exactly the chunk's size)."""
        frame = ensure_contiguous_ndarray(buf).view(np.uint8).reshape(-1)
        size = core.decoded_bytes(_WHO, frame)
        if out is not None:
            target = ensure_contiguous_ndarray(out).view(np.uint8).reshape(-1)
            if target.nbytes != size:
                raise ValueError("%s: the frame decodes to %d bytes, the output holds %d"
                                 % (_WHO, size, target.nbytes))
        else:
            target = np.empty(size, dtype=np.uint8)
        core.decode_frames(_WHO, [frame], [target], self.device, self.threads)
        return out if out is not None else target


register_codec(FZCodec)
