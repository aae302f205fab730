"""h5fz.FZZarr3: the HDF5 filter's frames as a zarr-python 3 codec (issue 33).

An array-to-bytes codec (it takes the place of zarr's "bytes" codec): a
chunk is encoded into exactly the frame the HDF5 filter writes for the same
chunk of a dataset with the same compression_opts, element type (little
endian) and fill value; zarr 3 always has a fill value, and it counts as an
HDF5 dataset's user-defined one (kept exactly, out of NOA's range). The
chunks zarr's codec pipeline hands over together are encoded and decoded in
one call to the engine (all cores, or the GPU), in a worker thread so the
event loop keeps going. With zarr's GPU buffers (``zarr.config.enable_gpu()``,
CuPy) the chunks stay in GPU memory: they are encoded there and only their
frames come to the host for the store; frames read from the store are decoded
into GPU memory, a batch at a time (``codec_pipeline.batch_size`` chunks).

Registered with zarr under the name "h5fz" when imported (``h5fz.FZZarr3``
imports it) and through the ``zarr.codecs`` entry point when installed.

    import zarr, h5fz
    z = zarr.create_array("t.zarr", shape=a.shape, chunks=(64, 64, 64), dtype=a.dtype,
                          serializer=h5fz.FZZarr3(preset="fzgpu", noa=1e-3), compressors=None)
"""

import asyncio
from dataclasses import dataclass

import numpy as np
from zarr.abc.codec import ArrayBytesCodec
from zarr.core.common import parse_named_configuration
from zarr.registry import register_codec

from . import _chunk_codec as core

_WHO = "h5fz.FZZarr3"


@dataclass(frozen=True)
class FZZarr3(ArrayBytesCodec):
    """H5Z-FZ as zarr-python 3's array-to-bytes codec (``serializer=``).

    The same choices as :class:`h5fz.FZ` (``preset``, one of ``abs=``,
    ``noa=``, ``rel=``, ``missing``, ``tuning``, ``alpha``, ``beta``), or
    ``compression_opts``, the filter's words (what the array's metadata
    records). ``device`` and ``threads``: where chunks are encoded and
    decoded, not stored.
    """

    is_fixed_size = False
    compression_opts: tuple
    device: str
    threads: int

    def __init__(self, *, preset=None, abs=None, noa=None, rel=None, missing=None, tuning=None, alpha=None,
                 beta=None, compression_opts=None, device="auto", threads=0):
        words = core.user_words(_WHO, preset, abs, noa, rel, missing, tuning, alpha, beta, compression_opts)
        core.check_device(_WHO, device)
        # The words checked now, as HDF5 checks them at dataset creation.
        core.stored_words(_WHO, words, np.dtype("f4"), (1,), None)
        object.__setattr__(self, "compression_opts", tuple(words))
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "threads", int(threads))

    @classmethod
    def from_dict(cls, data):
        _, configuration = parse_named_configuration(data, core.CODEC_ID)
        return cls(compression_opts=configuration["compression_opts"])

    def to_dict(self):
        return {"name": core.CODEC_ID, "configuration": {"compression_opts": list(self.compression_opts)}}

    def validate(self, *, shape, dtype, chunk_grid):
        # At array creation: a type the filter cannot take is refused then.
        native = np.dtype(dtype.to_native_dtype())
        if native.kind not in "fiu":
            raise TypeError("%s: %s elements cannot be encoded: it takes numbers (float16/32/64, integers of "
                            "1-8 bytes)" % (_WHO, native))

    def compute_encoded_size(self, input_byte_length, chunk_spec):
        raise NotImplementedError("%s: frames are of variable size" % _WHO)

    @staticmethod
    def _layout(spec):
        """(little-endian dtype, chunk shape, fill element) of a chunk spec."""
        dtype = np.dtype(spec.dtype.to_native_dtype()).newbyteorder("<")
        shape = tuple(spec.shape) or (1,)
        fill = core.fill_element(_WHO, np.asarray(spec.fill_value).item(), dtype)
        return dtype, shape, fill

    def _encode_batch(self, chunks_and_specs):
        out = [None] * len(chunks_and_specs)
        groups = {}
        for i, (chunk, spec) in enumerate(chunks_and_specs):
            if chunk is None:
                continue
            array = chunk.as_ndarray_like()
            dtype, shape, fill = self._layout(spec)
            on_gpu = core.on_gpu(array)
            if on_gpu:
                array = _cupy().ascontiguousarray(array.reshape(shape), dtype=dtype)
            elif isinstance(array, np.ndarray):
                array = np.ascontiguousarray(array.reshape(shape), dtype=dtype)
            else:
                raise TypeError("%s: a chunk of %s is neither a NumPy array nor in GPU memory (CuPy)"
                                % (_WHO, type(array).__name__))
            key = (dtype.str, shape, fill.tobytes(), on_gpu)
            groups.setdefault(key, (dtype, shape, fill, on_gpu, []))[4].append((i, array))
        for dtype, shape, fill, on_gpu, members in groups.values():
            stored = core.stored_words(_WHO, list(self.compression_opts), dtype, shape, fill)
            arrays = [a for _, a in members]
            if on_gpu:
                with _cupy().cuda.Device(arrays[0].device.id):
                    frames = core.encode_device_chunks(_WHO, stored, arrays)
            else:
                frames = core.encode_chunks(_WHO, stored, arrays, self.device, self.threads)
            for (i, _), frame in zip(members, frames):
                spec = chunks_and_specs[i][1]
                out[i] = spec.prototype.buffer.from_bytes(frame)
        return out

    def _decode_batch(self, chunks_and_specs):
        out = [None] * len(chunks_and_specs)
        frames, targets, places = [], [], []
        # Chunks come back where their frames were read to: GPU buffers in
        # (zarr's GPU prototype), GPU buffers out. The engine reads frames
        # from host memory, so a frame in GPU memory is copied down (it is
        # the small side), and its chunk decoded on the GPU.
        where = {core.on_gpu(data.as_array_like()) for data, _ in chunks_and_specs if data is not None}
        if len(where) > 1:
            raise ValueError("%s: a batch of frames is in host or GPU memory, not both" % _WHO)
        gpu = where == {True}
        xp = _cupy() if gpu else np
        for i, (data, spec) in enumerate(chunks_and_specs):
            if data is None:
                continue
            dtype, shape, _ = self._layout(spec)
            if not gpu:
                frames.append(np.ascontiguousarray(data.as_numpy_array()).view(np.uint8).reshape(-1))
            targets.append(xp.empty(shape, dtype=dtype))
            places.append(i)
        if gpu and places:
            # The batch's frames joined on the GPU and copied down at once: one
            # synchronisation, not one a frame.
            pieces = [xp.ascontiguousarray(chunks_and_specs[i][0].as_array_like()).reshape(-1).view(xp.uint8)
                      for i in places]
            joined = xp.concatenate(pieces).get()
            frames = np.split(joined, np.cumsum([p.size for p in pieces])[:-1])
        core.decode_frames(_WHO, frames, [t.reshape(-1).view(np.uint8) for t in targets], self.device,
                           self.threads)
        for i, target in zip(places, targets):
            spec = chunks_and_specs[i][1]
            native = np.dtype(spec.dtype.to_native_dtype())
            values = target if native == target.dtype else target.astype(native)
            out[i] = spec.prototype.nd_buffer.from_ndarray_like(values.reshape(spec.shape))
        return out

    async def encode(self, chunks_and_specs):
        return await asyncio.to_thread(self._encode_batch, list(chunks_and_specs))

    async def decode(self, chunks_and_specs):
        return await asyncio.to_thread(self._decode_batch, list(chunks_and_specs))


def _cupy():
    try:
        import cupy
    except ImportError:
        raise RuntimeError("%s: zarr handed over GPU buffers, which need CuPy" % _WHO) from None
    return cupy


register_codec(core.CODEC_ID, FZZarr3)
