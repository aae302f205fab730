#!/usr/bin/env python3
"""Zarr 3 with GPU buffers (zarr.config.enable_gpu(), CuPy): a float32 field
in GPU memory written through the h5fz codec and read back into GPU memory,
one chunk a codec call (zarr's default, codec_pipeline.batch_size 1) against
--batch chunks a call (the codec encodes and decodes each batch in one engine
call on the GPU), beside the CPU buffers' way (the array copied down, zarr's
default one-chunk path on the CPU, copied up) with the same codec and with
zarr's Zstd (issue 33's target: batched GPU decode >= 3x zarr's default
one-chunk path).

A benchmark program, not a test: it prints a markdown table (recorded in
docs/PERFORMANCE.md). Needs a GPU, CuPy and zarr 3. The field is wmag91
tiled by mirroring (h5py_bench.py), --gib of it, in --chunk-mib chunks of
whole planes, in a local store under --dir; each figure is the best of
--reps, timed until the GPU is done (a CuPy array in, a CuPy array out).

    python3 tools/bench/zarr_gpu_bench.py [--plugin-dir build/plugin] [--gib 1] [--chunk-mib 4] [--bound 1e-3]
        [--reps 3] [--batch 64] [--dir /tmp] [--presets fzgpu,cuszhi-cr]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_bench import field_arguments, field_layout  # noqa: E402  (it puts the clone's tools/python on the path)
from h5py_bench import PLANE, tiled_field, find_plugin_dir  # noqa: E402
from zarr_bench import store_bytes  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--reps", type=int, default=3)
parser.add_argument("--batch", type=int, default=64)
parser.add_argument("--presets", default="fzgpu,cuszhi-cr")


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    import cupy as cp
    import zarr
    import zarr.codecs
    import h5fz
    if int(zarr.__version__.split(".")[0]) < 3:
        sys.exit("zarr_gpu_bench.py needs zarr 3")
    plane_bytes, planes, chunk_planes = field_layout(args)
    field = np.ascontiguousarray(tiled_field(args.data, planes))
    on_gpu = cp.asarray(field)
    raw_mb = field.nbytes / 1e6
    chunks = (chunk_planes,) + PLANE
    folder = tempfile.mkdtemp(prefix="fz-zarr-gpu-", dir=args.dir)

    def timed(fn):
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        out = fn()
        cp.cuda.Device().synchronize()
        return time.perf_counter() - start, out

    # The codec's own share of a read or write: the time inside its batch
    # calls (worker threads, so summed over calls that may overlap).
    from h5fz import _zarr3
    inside = {"seconds": 0.0}

    def clocked(method):
        def wrapper(self, chunks_and_specs):
            start = time.perf_counter()
            try:
                return method(self, chunks_and_specs)
            finally:
                inside["seconds"] += time.perf_counter() - start
        return wrapper
    _zarr3.FZZarr3._decode_batch = clocked(_zarr3.FZZarr3._decode_batch)
    _zarr3.FZZarr3._encode_batch = clocked(_zarr3.FZZarr3._encode_batch)

    def run(label, serializer, compressors, gpu_buffers, batch):
        path = os.path.join(folder, "a.zarr")
        writes, reads, codec_reads = [], [], []
        back = None
        for _ in range(args.reps):
            shutil.rmtree(path, ignore_errors=True)
            with zarr.config.set({"codec_pipeline.batch_size": batch}):
                if gpu_buffers:
                    with zarr.config.enable_gpu():
                        z = zarr.create_array(path, shape=field.shape, chunks=chunks, dtype=field.dtype,
                                              serializer=serializer, compressors=compressors, fill_value=0)

                        def write():
                            z[...] = on_gpu
                        writes.append(timed(write)[0])
                        inside["seconds"] = 0.0
                        seconds, back = timed(lambda: z[...])
                        reads.append(seconds)
                        codec_reads.append(inside["seconds"])
                else:
                    z = zarr.create_array(path, shape=field.shape, chunks=chunks, dtype=field.dtype,
                                          serializer=serializer, compressors=compressors, fill_value=0)

                    def write():
                        z[...] = cp.asnumpy(on_gpu)
                    writes.append(timed(write)[0])
                    inside["seconds"] = 0.0
                    seconds, back = timed(lambda: cp.asarray(z[...]))
                    reads.append(seconds)
                    codec_reads.append(inside["seconds"])
        assert isinstance(back, cp.ndarray)
        ratio = field.nbytes / store_bytes(path)
        shutil.rmtree(path, ignore_errors=True)
        best = int(np.argmin(reads))
        return label, ratio, min(writes), min(reads), codec_reads[best], cp.asnumpy(back)

    rows = []
    for preset in args.presets.split(","):
        codec = h5fz.FZZarr3(preset=preset, noa=args.bound)
        rows.append(run("h5fz %s, GPU buffers, one chunk a call (zarr's default)" % preset, codec, None, True, 1)[:5])
        label, ratio, w, r, c, back = run("h5fz %s, GPU buffers, %d chunks a call" % (preset, args.batch), codec,
                                          None, True, args.batch)
        rows.append((label, ratio, w, r, c))
        worst = 0.0
        for z in range(0, planes, chunk_planes):  # NOA: each chunk's range times the bound
            part = field[z:z + chunk_planes].astype(np.float64)
            bound = max(args.bound * (part.max() - part.min()), np.finfo(np.float64).tiny)
            worst = max(worst, float(np.abs(back[z:z + chunk_planes] - part).max()) / bound)
        assert worst <= 1.0, "bound exceeded: %g" % worst
        rows.append(run("h5fz %s, CPU buffers, one chunk a call, copied down and up" % preset, codec, None, False,
                        1)[:5])
    rows.append(run("zarr Zstd 3 (lossless), CPU buffers, one chunk a call, copied down and up", "auto",
                    zarr.codecs.ZstdCodec(level=3), False, 1)[:5])
    # zarr's own floor with GPU buffers: no compression at all (the bytes codec).
    for batch in (1, args.batch):
        rows.append(run("zarr, no compression, GPU buffers, %d chunk(s) a call" % batch, "auto", None, True,
                        batch)[:5])
    os.rmdir(folder)

    print("# zarr %s, CuPy %s, GPU %s: %.0f MB float32 (%d x %d x %d), chunks %d x %d x %d (%.1f MiB), NOA %g; "
          "best of %d" % (zarr.__version__, cp.__version__, cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                          raw_mb, planes, PLANE[0], PLANE[1], chunks[0], chunks[1], chunks[2],
                          chunk_planes * plane_bytes / 2 ** 20, args.bound, args.reps))
    print()
    print("| codec and path | ratio | write s | write GB/s | read s | read GB/s | of the read, in h5fz's decode calls s |")
    print("|---|---|---|---|---|---|---|")
    for label, ratio, w, r, c in rows:
        print("| %s | %.2f | %.3f | %.2f | %.3f | %.2f | %s |" % (label, ratio, w, raw_mb / 1e3 / w, r, raw_mb / 1e3 / r,
                                                              "%.3f" % c if c else "-"))


if __name__ == "__main__":
    main()
