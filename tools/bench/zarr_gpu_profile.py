#!/usr/bin/env python3
"""Where a batched zarr 3 read into GPU buffers spends its time with the h5fz
codec (issue 33): zarr_gpu_bench.py's 1 GiB field written once, then read
back with the time inside the codec's batch calls (worker threads), inside
_chunk_codec.decode_frames and inside the plugin's
h5z_fz_decode_batch_to_device call (each summed over concurrent calls), then
under cProfile, which sees zarr's own work in the main thread (the top
entries by cumulative time).

    python3 tools/bench/zarr_gpu_profile.py [--plugin-dir build-gpu/plugin] [--gib 1] [--chunk-mib 4] [--batch 64]
"""

import cProfile
import os
import pstats
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from write_bench import field_arguments, field_layout  # noqa: E402  (it puts the clone's tools/python on the path)
from h5py_bench import PLANE, tiled_field, find_plugin_dir  # noqa: E402
import argparse  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
field_arguments(parser)
parser.add_argument("--batch", type=int, default=64)
parser.add_argument("--preset", default="fzgpu")


def main():
    args = parser.parse_args()
    os.environ["HDF5_PLUGIN_PATH"] = find_plugin_dir(args.plugin_dir)
    import cupy as cp
    import zarr
    import h5fz
    from h5fz import _chunk_codec
    _, planes, chunk_planes = field_layout(args)
    field = cp.asarray(np.ascontiguousarray(tiled_field(args.data, planes)))
    from h5fz import _zarr3
    inside = {}

    def clocked(name, function):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                seconds, calls = inside.get(name, (0.0, 0))
                inside[name] = (seconds + time.perf_counter() - start, calls + 1)
        return wrapper
    _zarr3.FZZarr3._decode_batch = clocked("FZZarr3._decode_batch", _zarr3.FZZarr3._decode_batch)
    _chunk_codec.decode_frames = clocked("decode_frames", _chunk_codec.decode_frames)
    _chunk_codec.decoded_bytes = clocked("decoded_bytes (frame headers)", _chunk_codec.decoded_bytes)
    lib = _chunk_codec._library()
    lib.h5z_fz_decode_batch_to_device = clocked("h5z_fz_decode_batch_to_device", lib.h5z_fz_decode_batch_to_device)
    path = os.path.join(tempfile.mkdtemp(dir=args.dir), "p.zarr")
    with zarr.config.enable_gpu(), zarr.config.set({"codec_pipeline.batch_size": args.batch}):
        z = zarr.create_array(path, shape=field.shape, chunks=(chunk_planes,) + PLANE, dtype="f4", fill_value=0,
                              serializer=h5fz.FZZarr3(preset=args.preset, noa=args.bound), compressors=None)
        z[...] = field
        z[...]  # warm
        inside.clear()
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        z[...]
        cp.cuda.Device().synchronize()
        print("read %.3f s, batches of %d chunks" % (time.perf_counter() - start, args.batch))
        for name, (seconds, calls) in inside.items():
            print("  inside %-32s %.3f s over %d calls" % (name, seconds, calls))
        profile = cProfile.Profile()
        profile.enable()
        z[...]
        cp.cuda.Device().synchronize()
        profile.disable()
    pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
