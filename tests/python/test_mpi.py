"""Parallel HDF5 (issue 16, item 1, first part): collective writes and reads
of H5Z-FZ datasets from 2 and 4 ranks (oversubscribed on a 2-core machine)
through Debian's parallel HDF5 1.10 (python3-h5py-mpi, mpi4py, Open MPI),
checked by tests/mpi/collective_check.py against one process writing the
same data: every chunk equal frame for frame, each rank's collective read
equal to the single-process values, and every element within the bound,
for every preset and mode, with chunks owned by several ranks and ragged
edges. mpirun runs Debian's /usr/bin/python3 whatever interpreter runs
pytest; without Open MPI or h5py-mpi the test skips, and fails instead under
FZ_REQUIRE_ALL_PY=1 (the README's test command, which installs them)."""

import json
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(REPO, "tests", "mpi", "collective_check.py")
MPI_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.usefixtures("plugin")


def mpi_environment():
    """Why MPI tests cannot run here, or None."""
    if not shutil.which("mpirun"):
        return "no mpirun (Debian: openmpi-bin)"
    probe = subprocess.run([MPI_PYTHON, "-c", "import mpi4py, h5py._debian_h5py_mpi"], capture_output=True, text=True,
                           timeout=60)
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "import failed"
        return "Debian's python3 lacks mpi4py or h5py-mpi (python3-mpi4py, python3-h5py-mpi): " + last
    return None


def mpirun(ranks, *args):
    env = dict(os.environ)
    # Open MPI refuses root without these; CI and the device machines run as root.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    return subprocess.run(["mpirun", "-np", str(ranks), "--oversubscribe", MPI_PYTHON] + list(args),
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("ranks", [2, 4])
def test_collective_writes_equal_one_process(tmp_path, data_dir, ranks):
    why = mpi_environment()
    if why:
        if os.environ.get("FZ_REQUIRE_ALL_PY") == "1":
            pytest.fail("MPI tests cannot run: " + why)
        pytest.skip(why)
    r = mpirun(ranks, CHECK, "--out", str(tmp_path), "--data", data_dir)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["ranks"] == ranks and report["mpi"], report
    assert len(report["results"]) == 14
    for case in report["results"]:
        assert case["chunks"] == case["expected_chunks"], case
        assert case["filters_equal"] and case["frames_equal"], case
        assert case["reads_equal"], case
        assert case["violations"] == 0, case
        assert case["ratio"] > 1.2, case
