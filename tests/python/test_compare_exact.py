"""h5fz compare (issue 28 item 17): integer differences exactly (uint64
above 2^53), an element type that changed flagged, and B's ratio over B's
own element size."""

import subprocess
import sys

import numpy as np
import pytest
import h5py

import h5fz
from conftest import REPO

pytestmark = pytest.mark.usefixtures("plugin")


@pytest.fixture()
def files(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    big = np.array([2 ** 63, 2 ** 64 - 1, 5, 2 ** 60], dtype="<u8")
    other = big.copy()
    other[0] += np.uint64(1)            # 2^63 + 1: a difference float64 rounds away
    other[3] -= np.uint64(3)
    signed = np.array([-2 ** 63, 2 ** 62, 0], dtype="<i8")
    field = np.linspace(-3, 3, 4096, dtype="<f4").reshape(64, 64)
    with h5py.File(a, "w") as f:
        f.create_dataset("u64", data=big)
        f.create_dataset("i64", data=signed)
        f.create_dataset("field", data=field)
    with h5py.File(b, "w") as f:
        f.create_dataset("u64", data=other, chunks=(4,), **h5fz.FZ())
        f.create_dataset("i64", data=signed[::-1].copy(), chunks=(3,), **h5fz.FZ())
        f.create_dataset("field", data=np.round(field).astype("<i2"), chunks=(64, 64), **h5fz.FZ())
    return a, b, field


def test_integers_exact_and_type_change_flagged(files):
    a, b, field = files
    r = h5fz.compare(a, b)
    assert r["/u64"]["max_abs_error"] == 3 and isinstance(r["/u64"]["max_abs_error"], int)
    assert r["/i64"]["max_abs_error"] == 2 ** 63        # -2^63 against 0
    assert not r["/u64"]["dtype_changed"]
    s = r["/field"]
    assert s["dtype_changed"] and s["dtype"] == "float32" and s["dtype_b"] == "int16"
    assert s["max_abs_error"] == pytest.approx(float(np.max(np.abs(np.round(field) - field.astype(np.float64)))))
    with h5py.File(b, "r") as f:
        stored = f["field"].id.get_storage_size()
    assert s["ratio_b"] == pytest.approx(field.size * 2 / stored)   # int16: 2 bytes each, not A's 4


def test_table_says_it(files):
    a, b, _ = files
    out = subprocess.run([sys.executable, "-m", "h5fz", "compare", a, b], capture_output=True, text=True,
                         cwd=REPO + "/tools/python", timeout=300)
    assert out.returncode == 0, out.stderr
    assert "| /u64 | 4 | 3 |" in out.stdout, out.stdout
    assert "| /i64 | 3 | 9223372036854775808 |" in out.stdout, out.stdout
    assert "element type changed: float32 in A, int16 in B" in out.stdout, out.stdout
