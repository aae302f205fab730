"""h5fz.compare and `python -m h5fz compare A B [--plot]` (issue 15, item 6):
the errors, PSNR and ratios of a compressed file against its original, per
dataset, computed a block at a time; the picture when matplotlib is there."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import h5py

import h5fz
from conftest import REPO

pytestmark = pytest.mark.usefixtures("plugin")


@pytest.fixture(scope="module")
def pair(tmp_path_factory, data_dir):
    d = tmp_path_factory.mktemp("compare")
    field = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    a, b = str(d / "a.h5"), str(d / "b.h5")
    special = field.copy()
    special[0, 0, :3] = [np.nan, np.inf, -np.inf]
    with h5py.File(a, "w") as f:
        f.create_dataset("field", data=field)
        f.create_dataset("special", data=special)
        f.create_dataset("ints", data=np.arange(1000, dtype="i4"))
        f.create_dataset("names", data=np.array([b"x", b"y"]))
        f.create_dataset("only_in_a", data=np.zeros(3))
    with h5py.File(b, "w") as f:
        f.create_dataset("field", data=field, chunks=(91, 91, 91), **h5fz.FZ(preset="cusz", noa=1e-3))
        f.create_dataset("special", data=special, chunks=(91, 91, 91), **h5fz.FZ(preset="pfpl", abs=1e-2))
        f.create_dataset("ints", data=np.arange(1000, dtype="i4"), chunks=(1000,), **h5fz.FZ())
        f.create_dataset("names", data=np.array([b"x", b"y"]))
    return a, b, field


def test_statistics_are_those_of_the_arrays(pair):
    a, b, field = pair
    r = h5fz.compare(a, b)
    with h5py.File(b, "r") as f:
        y = f["field"][()].astype(np.float64)
    x = field.astype(np.float64)
    s = r["/field"]
    assert s["max_abs_error"] == pytest.approx(float(np.max(np.abs(y - x))))
    assert 0 < s["max_abs_error"] <= 1e-3 * (x.max() - x.min())
    rmse = math.sqrt(float(np.mean((y - x) ** 2)))
    assert s["psnr"] == pytest.approx(20 * math.log10((x.max() - x.min()) / rmse))
    nz = x != 0
    assert s["max_rel_error"] == pytest.approx(float(np.max(np.abs(y - x)[nz] / np.abs(x[nz]))))
    assert s["ratio_a"] == pytest.approx(1.0) and s["ratio_b"] > 4
    assert s["special_values_changed"] == 0
    assert r["/special"]["special_values_changed"] == 0 and r["/special"]["max_abs_error"] <= 1e-2
    assert r["/ints"]["max_abs_error"] == 0 and r["/ints"]["psnr"] == math.inf
    assert r["skipped"] == {"/names": "not a numeric array", "/only_in_a": "not in B"}


def test_blocks_give_the_same_answer(pair):
    a, b, _ = pair
    from h5fz._compare import dataset_stats
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        whole = dataset_stats(fa["field"], fb["field"])
        rows = dataset_stats(fa["field"], fb["field"], block_bytes=1)  # one plane at a time
    for k in ("max_abs_error", "max_rel_error", "psnr"):
        assert rows[k] == pytest.approx(whole[k], rel=1e-9)


def test_changed_special_values_are_counted(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    x = np.array([1.0, np.nan, np.inf, 2.0])
    with h5py.File(a, "w") as f:
        f["v"] = x
    with h5py.File(b, "w") as f:
        f["v"] = np.array([1.0, 0.0, np.inf, np.nan])
    assert h5fz.compare(a, b)["/v"]["special_values_changed"] == 2


def test_command_line(pair, tmp_path):
    a, b, _ = pair
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "tools", "python"))
    r = subprocess.run([sys.executable, "-m", "h5fz", "compare", a, b], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "| /field | 91x91x91 |" in r.stdout and "skipped /names: not a numeric array" in r.stdout
    r = subprocess.run([sys.executable, "-m", "h5fz", "compare", a, str(tmp_path / "missing.h5")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and "h5fz compare:" in r.stderr


def test_plot(pair, tmp_path):
    pytest.importorskip("matplotlib")
    a, b, _ = pair
    png = str(tmp_path / "cmp.png")
    h5fz.compare(a, b, plot=png)
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) > 10000


def test_the_h5fz_program_runs_it(pair, h5fz_tool):
    """`h5fz compare` (the C++ tool) runs this package with this interpreter."""
    a, b, _ = pair
    tool = h5fz_tool
    env = dict(os.environ, H5FZ_PYTHON=sys.executable)
    r = subprocess.run([tool, "compare", a, b], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| /field | 91x91x91 |" in r.stdout
    r = subprocess.run([tool, "compare", a], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and "two files" in r.stderr
    r = subprocess.run([tool, "compare", a, b], capture_output=True, text=True, timeout=60,
                       env=dict(env, H5FZ_PYTHON="/nonexistent/python"))
    assert r.returncode == 1 and "H5FZ_PYTHON" in r.stderr
