"""Run under mpirun -np 2 with Debian's python3 (h5py-mpi): the ranks of a
collective write pass different error bounds (issue 28 item 5). Each rank's
filter codes its chunks with its own bound, the file keeps one rank's
cd_values; a reader must then refuse the other rank's chunks (the filter's
frame check, filter/frame_check.*), never return them silently outside the
stored bound. Rank 0 prints one JSON line per case: what the filter read and
h5fz.read did, and how many elements lie outside the stored bound.

    mpirun -np 2 python3 tests/mpi/different_bounds.py --out DIR --data DIR
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

# (preset, mode, bound per rank): the second rank's 1000x the first's, and
# the reverse (the file keeps one rank's values, which one is HDF5's choice).
CASES = [("fzgpu", "noa", (1e-4, 1e-1)), ("fzgpu", "noa", (1e-1, 1e-4)),
         ("pfpl", "abs", (1e-3, 1.0)), ("cuszhi-cr", "noa", (1e-4, 1e-1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    field = np.fromfile(os.path.join(args.data, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)[:90]
    rows = field.shape[0] // size
    lo, hi = rank * rows, (rank + 1) * rows
    # Every collective call first, the same on every rank whatever happens;
    # rank 0 reads alone afterwards, so a failure there cannot leave the
    # other rank waiting.
    write_errors = []
    for index, (preset, mode, bounds) in enumerate(CASES):
        path = os.path.join(args.out, "bounds%d.h5" % index)
        write_error = None
        try:
            with h5py.File(path, "w", driver="mpio", comm=comm) as f:
                d = f.create_dataset("d", shape=field.shape, dtype="<f4", chunks=(15, 91, 91),
                                     **h5fz.FZ(preset=preset, **{mode: bounds[rank]}))
                with d.collective:
                    d[lo:hi] = field[lo:hi]
        except Exception as e:  # noqa: BLE001  (a write-time refusal is a pass too)
            write_error = "%s: %s" % (type(e).__name__, e)
        write_errors.append(comm.gather(write_error, root=0))
    comm.Barrier()
    if rank != 0:
        return
    for index, (preset, mode, bounds) in enumerate(CASES):
        path = os.path.join(args.out, "bounds%d.h5" % index)
        result = {"case": index, "preset": preset, "mode": mode, "bounds": bounds, "write_errors": write_errors[index]}
        try:
            read_back(path, field, mode, bounds, result)
        except Exception as e:  # noqa: BLE001
            result["unexpected"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(result), flush=True)


def read_back(path, field, mode, bounds, result):
    if any(result["write_errors"]):
        return
    with h5py.File(path, "r") as f:
        d = f["d"]
        result["stored"] = h5fz.describe_filter(d) if hasattr(h5fz, "describe_filter") else None
        try:
            got = d[...]
            result["filter_read"] = "ok"
        except OSError as e:
            got = None
            result["filter_read"] = "error: %s" % e
        try:
            h5fz.read(d)
            result["batch_read"] = "ok"
        except OSError as e:
            result["batch_read"] = "error: %s" % e
    if got is not None:
        # Elements outside the tighter rank's bound, per chunk as the filter takes NOA.
        bad = 0
        for start in range(0, field.shape[0], 15):
            o = field[start:start + 15].astype(np.float64)
            err = np.abs(got[start:start + 15] - o)
            bad += int(np.count_nonzero(err > min(bounds) * ((o.max() - o.min()) if mode == "noa" else 1.0)))
        result["outside_tighter_bound"] = bad


if __name__ == "__main__":
    main()
