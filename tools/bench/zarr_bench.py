#!/usr/bin/env python3
"""Zarr 3 writes and reads of a float32 field with the h5fz codec beside
zarr's own Blosc and Zstd and the numcodecs SZ3 and ZFP codecs
(numcodecs-wasm-sz3, numcodecs-wasm-zfp), in one run (issue 33's Zarr
target: faster than SZ3 and ZFP, at a higher ratio than ZFP).

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). Needs zarr 3 (tools/setup/deps.sh installs it in
interpreter B). The field is wmag91 tiled by mirroring (h5py_bench.py),
--gib of it, in --chunk-mib chunks of whole planes, written into a local
store and read back whole (through the same array object); each figure is the best of --reps. The codec
pipeline hands --batch chunks to a codec at once (zarr's
codec_pipeline.batch_size), the same for every codec. Bounds: h5fz at NOA
(each chunk's value range times --bound), SZ3 in its "rel" mode (the same
rule), ZFP in fixed accuracy with the whole field's range times --bound (it
has no relative mode: a looser bound for most chunks). The numcodecs codecs
go through a small array-to-bytes adapter of this script's.

    python3 tools/bench/zarr_bench.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4] [--bound 1e-3]
        [--reps 2] [--batch 16] [--dir /tmp] [--codecs h5fz-fzgpu,h5fz-cuszhi-cr,blosc,zstd,sz3,zfp]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_bench import field_arguments, field_layout  # noqa: E402  (it puts the clone's tools/python on the path)
from h5py_bench import PLANE, tiled_field, find_plugin_dir, cpu_model  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--reps", type=int, default=2)
parser.add_argument("--batch", type=int, default=16)
parser.add_argument("--codecs", default="h5fz-fzgpu,h5fz-cuszhi-cr,blosc,zstd,sz3,zfp")


def numcodecs_adapter():
    """An array-to-bytes codec around a numcodecs codec object (SZ3, ZFP)."""
    from zarr.abc.codec import ArrayBytesCodec

    @dataclass(frozen=True)
    class Adapter(ArrayBytesCodec):
        is_fixed_size = False
        inner: object

        def __init__(self, inner):
            object.__setattr__(self, "inner", inner)

        def to_dict(self):
            return {"name": "bench-adapter"}

        def compute_encoded_size(self, n, spec):
            raise NotImplementedError

        async def _encode_single(self, chunk, spec):
            return spec.prototype.buffer.from_bytes(bytes(self.inner.encode(chunk.as_numpy_array())))

        async def _decode_single(self, data, spec):
            dtype = np.dtype(spec.dtype.to_native_dtype())
            out = np.asarray(self.inner.decode(data.as_numpy_array())).view(dtype).reshape(spec.shape)
            return spec.prototype.nd_buffer.from_ndarray_like(out)

    return Adapter


def store_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f != "zarr.json")
    return total


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    import zarr
    import zarr.codecs
    import h5fz
    if int(zarr.__version__.split(".")[0]) < 3:
        sys.exit("zarr_bench.py needs zarr 3 (tools/setup/deps.sh installs it in interpreter B)")
    plane_bytes, planes, chunk_planes = field_layout(args)
    field = np.ascontiguousarray(tiled_field(args.data, planes))
    value_range = float(field.max()) - float(field.min())
    raw_mb = field.nbytes / 1e6
    chunks = (chunk_planes,) + PLANE

    def layout(name):
        """(serializer, compressors, the bound each element keeps, its name in the table)."""
        if name.startswith("h5fz-"):
            preset = name[len("h5fz-"):]
            return h5fz.FZZarr3(preset=preset, noa=args.bound), None, None, "h5fz %s, NOA %g" % (preset, args.bound)
        if name == "blosc":
            return "auto", zarr.codecs.BloscCodec(cname="zstd", clevel=5, shuffle="shuffle"), 0.0, \
                "zarr Blosc (zstd 5, shuffle), lossless"
        if name == "zstd":
            return "auto", zarr.codecs.ZstdCodec(level=3), 0.0, "zarr Zstd 3, lossless"
        adapter = numcodecs_adapter()
        if name == "sz3":
            from numcodecs_wasm_sz3 import Sz3
            return adapter(Sz3(eb_mode="rel", eb_rel=args.bound)), None, None, "SZ3 (wasm), rel %g" % args.bound
        if name == "zfp":
            from numcodecs_wasm_zfp import Zfp
            tolerance = args.bound * value_range
            return adapter(Zfp(mode="fixed-accuracy", tolerance=tolerance)), None, tolerance, \
                "ZFP (wasm), accuracy %.3g (the field's range x %g)" % (tolerance, args.bound)
        raise SystemExit("unknown codec %r" % name)

    print("# zarr %s: %.0f MB float32 (%d x %d x %d), chunks %d x %d x %d (%.1f MiB), batches of %d chunks; best of %d"
          % (zarr.__version__, raw_mb, planes, PLANE[0], PLANE[1], chunks[0], chunks[1], chunks[2],
             chunk_planes * plane_bytes / 2 ** 20, args.batch, args.reps))
    print("# host: %s, %d cores" % (cpu_model(), os.cpu_count()))
    print()
    print("| codec | ratio | write s | write MB/s | read s | read MB/s | max error / bound |")
    print("|---|---|---|---|---|---|---|")
    folder = tempfile.mkdtemp(prefix="fz-zarr-", dir=args.dir)
    with zarr.config.set({"codec_pipeline.batch_size": args.batch}):
        for name in args.codecs.split(","):
            serializer, compressors, fixed_bound, label = layout(name)
            path = os.path.join(folder, name + ".zarr")
            writes, reads = [], []
            for _ in range(args.reps):
                shutil.rmtree(path, ignore_errors=True)
                z = zarr.create_array(path, shape=field.shape, chunks=chunks, dtype=field.dtype,
                                      serializer=serializer, compressors=compressors, fill_value=0)
                start = time.perf_counter()
                z[...] = field
                writes.append(time.perf_counter() - start)
                start = time.perf_counter()
                back = z[...]  # (the same array object: the adapter is no registered codec)
                reads.append(time.perf_counter() - start)
            err = np.abs(back.astype(np.float64) - field.astype(np.float64))
            if fixed_bound is None:  # per chunk (of whole planes): the chunk's range times the bound
                worst = 0.0
                for z in range(0, planes, chunk_planes):
                    part = field[z:z + chunk_planes]
                    bound = max(args.bound * (float(part.max()) - float(part.min())), np.finfo(np.float64).tiny)
                    worst = max(worst, float(err[z:z + chunk_planes].max()) / bound)
            else:
                worst = float(err.max() / fixed_bound) if fixed_bound else float(err.max())
            ratio = field.nbytes / store_bytes(path)
            print("| %s | %.2f | %.2f | %.0f | %.2f | %.0f | %.4g |"
                  % (label, ratio, min(writes), raw_mb / min(writes), min(reads), raw_mb / min(reads), worst))
            shutil.rmtree(path, ignore_errors=True)
    os.rmdir(folder)


if __name__ == "__main__":
    main()
