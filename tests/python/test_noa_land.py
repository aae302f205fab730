"""NOA and an undeclared missing value (issue 12, item 5): a -1e10 land block
(netCDF land, nccopy files without a fill value) stretches NOA's range and
every sea value collapses to one number. The filter warns on stderr once per
dataset, naming the missing-value option; with the missing value given, or on
ordinary fields, it says nothing."""

import os
import subprocess
import sys

import pytest

from conftest import HERE, REPO

pytestmark = pytest.mark.usefixtures("plugin", "data_dir")

CHILD = r"""
import sys
sys.path[:0] = [%(tools)r, %(here)r]
import h5fz, fz_samples
h5fz.register()
import h5py, numpy as np
mode = sys.argv[2]
with h5py.File(sys.argv[1], "w") as f:
    if mode == "clean":
        for name, dtype, shape in fz_samples.REAL_FIELDS:
            data = fz_samples.load_real(name)
            chunks = tuple(max(1, s // 2) for s in shape)
            f.create_dataset(name, data=data, chunks=chunks, compression=h5fz.FILTER_ID,
                             compression_opts=h5fz.compression_opts("pfpl", "noa", 1e-3))
    else:
        field = fz_samples.load_real("wmag91.float").copy()
        field[:, :40, :50] = np.float32(-1e10)   # land
        missing = -1e10 if mode == "declared" else None
        opts = h5fz.compression_opts("pfpl", "noa", 1e-3, missing=missing, dtype="float32")
        # two chunks with land, one dataset: one warning
        f.create_dataset("t", data=field, chunks=(16, 91, 91), compression=h5fz.FILTER_ID, compression_opts=opts)
        if mode == "two":
            # another dataset with other parameters warns again
            f.create_dataset("u", data=field, chunks=(8, 91, 91), compression=h5fz.FILTER_ID,
                             compression_opts=opts)
        back = f["t"][:]
        sea = field > -1e9
        print("SEA_DISTINCT", len(np.unique(back[sea])))
"""


def _write(tmp_path, mode):
    code = CHILD % {"tools": os.path.join(REPO, "tools", "python"), "here": HERE}
    env = {k: v for k, v in os.environ.items() if k != "H5Z_FZ_VERBOSE"}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / ("%s.h5" % mode)), mode],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return r.stdout, [line for line in r.stderr.splitlines() if "H5Z-FZ" in line]


def test_land_without_missing_value_warns_once(tmp_path):
    stdout, lines = _write(tmp_path, "one")
    assert len(lines) == 1, lines
    warning = lines[0]
    assert "-1e+10" in warning and "missing value" in warning, warning
    assert "cd_values[4..5]" in warning and "--missing" in warning and "missing=" in warning, warning
    # what the warning is about: the sea collapsed to next to nothing
    assert int(stdout.split("SEA_DISTINCT")[1]) < 10, stdout


def test_second_dataset_warns_again(tmp_path):
    _, lines = _write(tmp_path, "two")
    assert len(lines) == 2, lines
    assert "chunk 16x91x91" in lines[0] and "chunk 8x91x91" in lines[1], lines


def test_declared_missing_value_is_quiet(tmp_path):
    stdout, lines = _write(tmp_path, "declared")
    assert lines == [], lines
    assert int(stdout.split("SEA_DISTINCT")[1]) > 1000, stdout


def test_real_fields_are_quiet(tmp_path):
    _, lines = _write(tmp_path, "clean")
    assert lines == [], lines
