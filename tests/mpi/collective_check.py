"""Run under mpirun with Debian's python3 (h5py-mpi, parallel HDF5 1.10):
collective writes and reads of H5Z-FZ datasets from every rank, checked
against one process writing the same data. tests/python/test_mpi.py runs it
with 2 and 4 ranks and reads the JSON line rank 0 prints.

For every preset and mode (float32 wmag91, and float64 pressure for two
presets), the ranks split the rows unevenly, so chunks (10 x 40 x 91, ragged
in two axes) are owned by several ranks, write them collectively into one
file, and read their rows back collectively. Rank 0 writes the same dataset
from one process (no MPI driver). Checked: every stored chunk equal frame
for frame, each rank's collective read equal to the single-process file's
values, and the bound per chunk.

    mpirun -np 4 python3 tests/mpi/collective_check.py --out DIR [--data DIR]
"""

import argparse
import json
import os
import sys

import numpy as np
from mpi4py import MPI
import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "python"))
import h5fz  # noqa: E402


def cases(data_dir):
    w = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    p = np.fromfile(os.path.join(data_dir, "pressure.384_384.f64"), dtype="<f8").reshape(384, 384)
    wrange = float(w.max() - w.min())
    out = [("lossless", "abs", None, w, (10, 40, 91))]
    for preset in ["pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"]:
        out.append((preset, "noa", 1e-3, w, (10, 40, 91)))
        out.append((preset, "abs", 1e-2 * wrange, w, (10, 40, 91)))
    out.append(("pfpl", "rel", 1e-3, w, (10, 40, 91)))
    for preset in ["fzgpu", "cuszhi-cr"]:
        out.append((preset, "noa", 1e-4, p, (50, 384)))
    return out


def chunk_violations(original, decoded, chunks, mode, bound):
    """Elements outside the bound, the NOA range taken per chunk as the filter does."""
    if bound is None:
        return int(np.count_nonzero(original != decoded))
    err = np.abs(original.astype(np.float64) - decoded.astype(np.float64))
    if mode == "abs":
        return int(np.count_nonzero(err > bound))
    if mode == "rel":
        return int(np.count_nonzero(err > bound * np.abs(original.astype(np.float64))))
    bad = 0
    for start in np.ndindex(*[-(-s // c) for s, c in zip(original.shape, chunks)]):
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(start, chunks))
        o = original[sl].astype(np.float64)
        bad += int(np.count_nonzero(err[sl] > bound * (o.max() - o.min())))
    return bad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")))
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    results = []
    for n, (preset, mode, bound, data, chunks) in enumerate(cases(args.data)):
        opts = h5fz.compression_opts(preset, mode, bound) if bound is not None else h5fz.compression_opts(preset)
        label = "%s %s %s %s" % (preset, mode, bound, data.dtype)
        par = os.path.join(args.out, "par-%d-%d.h5" % (size, n))
        ser = os.path.join(args.out, "ser-%d-%d.h5" % (size, n))
        edges = np.linspace(0, data.shape[0], size + 1).astype(int)
        rows = slice(edges[rank], edges[rank + 1])
        with h5py.File(par, "w", driver="mpio", comm=comm) as f:
            d = f.create_dataset("x", shape=data.shape, dtype=data.dtype, chunks=chunks, compression=h5fz.FILTER_ID,
                                 compression_opts=opts)
            with d.collective:
                d[rows] = data[rows]
        if rank == 0:
            with h5py.File(ser, "w") as f:
                f.create_dataset("x", data=data, chunks=chunks, compression=h5fz.FILTER_ID, compression_opts=opts)
        comm.Barrier()
        with h5py.File(par, "r", driver="mpio", comm=comm) as f:
            d = f["x"]
            with d.collective:
                mine = d[rows]
        with h5py.File(ser, "r") as f:
            reference = f["x"][rows]
        read_equal = comm.gather(bool(np.array_equal(mine, reference)), root=0)
        if rank == 0:
            with h5py.File(par, "r") as a, h5py.File(ser, "r") as b:
                da, db = a["x"], b["x"]
                n_chunks = da.id.get_num_chunks()
                frames_equal = n_chunks == db.id.get_num_chunks() and all(
                    da.id.read_direct_chunk(da.id.get_chunk_info(i).chunk_offset)
                    == db.id.read_direct_chunk(da.id.get_chunk_info(i).chunk_offset) for i in range(n_chunks))
                decoded = da[()]
                results.append({
                    "case": label, "ranks": size, "chunks": n_chunks,
                    "expected_chunks": int(np.prod([-(-s // c) for s, c in zip(data.shape, chunks)])),
                    "filters_equal": da._filters == db._filters, "frames_equal": bool(frames_equal),
                    "reads_equal": all(read_equal), "violations": chunk_violations(data, decoded, chunks, mode, bound),
                    "ratio": data.nbytes / da.id.get_storage_size()})
            os.remove(par)
            os.remove(ser)
        comm.Barrier()
    if rank == 0:
        print(json.dumps({"ranks": size, "hdf5": h5py.version.hdf5_version, "mpi": h5py.get_config().mpi,
                          "results": results}))


if __name__ == "__main__":
    main()
