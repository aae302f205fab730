"""The h5fz Python package (issue 15, item 5): h5fz.FZ unpacks into h5py's
create_dataset as hdf5plugin's classes do, h5fz.inspect reports a file's
datasets, and the version has one home. The wheel itself (`pip install .`)
is tested in test_wheel.py."""

import os
import re

import numpy as np
import pytest
import h5py

import h5fz
from conftest import REPO, check_chunks_filtered

pytestmark = pytest.mark.usefixtures("plugin")


def test_fz_unpacks_to_the_filter_and_its_words():
    cases = [
        (dict(), ("lossless", "abs", None, {})),
        (dict(preset="fzgpu", noa=1e-3), ("fzgpu", "noa", 1e-3, {})),
        (dict(preset="pfpl", rel=1e-2), ("pfpl", "rel", 1e-2, {})),
        (dict(preset="cusz", abs=0.5, missing=-1e10, dtype="float32"), ("cusz", "abs", 0.5,
                                                                       dict(missing=-1e10, dtype="float32"))),
        (dict(preset="cuszhi-cr", noa=1e-4, tuning="manual", alpha=1.5, beta=4),
         ("cuszhi-cr", "noa", 1e-4, dict(tuning="manual", alpha=1.5, beta=4))),
    ]
    for kwargs, (preset, mode, bound, extra) in cases:
        fz = h5fz.FZ(**kwargs)
        words = h5fz.compression_opts(preset, mode, bound, **extra)
        assert dict(fz) == {"compression": h5fz.FILTER_ID, "compression_opts": words}, kwargs
        assert fz.filter_id == h5fz.FILTER_ID and fz.filter_options == words
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu", abs=1, noa=1e-3)
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu")  # lossy without a bound: compression_opts refuses it
    assert "noa=0.001" in repr(h5fz.FZ(preset="fzgpu", noa=1e-3))


def test_fz_writes_through_h5py_and_inspect_reports_it(tmp_path, data_dir):
    field = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    path = str(tmp_path / "fz.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("lossy", data=field, chunks=h5fz.chunks(field.shape, field.dtype),
                         **h5fz.FZ(preset="cuszhi-cr", noa=1e-3))
        g = f.create_group("g")
        g.create_dataset("lossless", data=field[:40], chunks=(20, 91, 91), **h5fz.FZ())
        g.create_dataset("plain", data=np.arange(10))
    with h5py.File(path, "r") as f:
        back = f["lossy"][()]
        check_chunks_filtered(f["lossy"])
        assert np.array_equal(f["g/lossless"][()], field[:40])
    assert np.max(np.abs(back.astype(np.float64) - field)) <= 1e-3 * (field.max() - field.min())
    found = {r["name"]: r for r in h5fz.inspect(path)}
    assert set(found) == {"/lossy", "/g/lossless", "/g/plain"}
    lossy = found["/lossy"]
    assert lossy["shape"] == (91, 91, 91) and lossy["chunks"] == (91, 91, 91) and lossy["dtype"] == "float32"
    assert lossy["fz"]["preset_name"] == "cuszhi-cr" and lossy["fz"]["mode_name"] == "noa"
    assert lossy["fz"]["bound"] == 1e-3 and lossy["fz"]["chunk_dims"] == (91, 91, 91)
    assert lossy["raw_bytes"] == field.nbytes and 5 < lossy["ratio"] < 20
    assert found["/g/lossless"]["fz"]["preset_name"] == "lossless"
    assert found["/g/lossless"]["ratio"] > 1
    assert found["/g/plain"]["fz"] is None


def test_the_version_comes_from_cmakelists_only():
    """One place (issue 33 item 1): the wheel's metadata takes CMakeLists.txt's
    version by the regex in pyproject.toml, and a clone's package reads the
    same file; no other file spells it."""
    cmake = open(os.path.join(REPO, "CMakeLists.txt")).read()
    version = re.search(r"project\(H5ZFZ VERSION ([0-9][0-9.]*)", cmake).group(1)
    pyproject = open(os.path.join(REPO, "pyproject.toml")).read()
    assert 'dynamic = ["version"]' in pyproject
    pattern = re.search(r"^regex = '(.+)'$", pyproject, re.M).group(1)
    assert re.search(pattern, cmake).group("value") == version
    assert not re.search(r"^version\s*=", pyproject, re.M)
    assert not os.path.exists(os.path.join(REPO, "tools", "python", "pyproject.toml"))
    assert not os.path.exists(os.path.join(REPO, "tools", "python", "setup.py"))
    assert h5fz.__version__ == version


def test_global_abs_bound_is_the_whole_finite_range():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(37, 50)).astype("f4")
    a[3, 4], a[5, 6], a[7, 8] = np.nan, np.inf, -1e10
    finite = a[np.isfinite(a)]
    assert h5fz.global_abs_bound(a, 1e-3) == pytest.approx(1e-3 * (float(finite.max()) - float(finite.min())))
    sea = finite[finite != np.float32(-1e10)]
    expect = 1e-3 * (float(sea.max()) - float(sea.min()))
    assert h5fz.global_abs_bound(a, 1e-3, missing=-1e10) == pytest.approx(expect)
    assert h5fz.global_abs_bound(a, 1e-3, missing=-1e10, block_bytes=1) == pytest.approx(expect)  # row by row
    assert h5fz.global_abs_bound(np.full((4, 4), 2.5), 1e-2) == np.finfo(np.float64).tiny
    assert h5fz.global_abs_bound(np.arange(10, dtype="i2"), 0.1) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        h5fz.global_abs_bound(a, 0)
    with pytest.raises(ValueError):
        h5fz.compression_opts("fzgpu", "noa-global", 1e-3)  # no data
    with pytest.raises(ValueError):
        h5fz.compression_opts("fzgpu", "noa", 1e-3, data=a)
    with pytest.raises(ValueError):
        h5fz.FZ(preset="fzgpu", noa=1e-3, noa_global=1e-3, data=a)


def test_noa_global_holds_one_bound_in_every_chunk(tmp_path, data_dir):
    field = np.fromfile(os.path.join(data_dir, "999x999.float"), dtype="<f4").reshape(999, 999)
    path = str(tmp_path / "global.h5")
    with h5py.File(path, "w") as f:
        src = f.create_dataset("src", data=field)
        eb = h5fz.global_abs_bound(src, 1e-3, block_bytes=1 << 16)  # read from the file in blocks
        assert eb == pytest.approx(1e-3 * (float(field.max()) - float(field.min())))
        f.create_dataset("global", data=field, chunks=(100, 999), **h5fz.FZ(preset="fzgpu", noa_global=1e-3,
                                                                             data=src))
        f.create_dataset("per_chunk", data=field, chunks=(100, 999), **h5fz.FZ(preset="fzgpu", noa=1e-3))
    found = {r["name"]: r for r in h5fz.inspect(path)}
    assert found["/global"]["fz"]["mode_name"] == "abs" and found["/global"]["fz"]["bound"] == eb
    with h5py.File(path, "r") as f:
        g = f["global"][()].astype(np.float64)
        c = f["per_chunk"][()].astype(np.float64)
    x = field.astype(np.float64)
    assert np.max(np.abs(g - x)) <= eb
    # Per chunk the NOA bound is each chunk's range x 1e-3: tighter in the chunks of small range.
    tightest = min(1e-3 * (x[i:i + 100].max() - x[i:i + 100].min()) for i in range(0, 999, 100))
    assert tightest < eb and np.max(np.abs(c - x)) <= eb


def test_the_console_command_explains_a_package_without_its_program(capsys):
    """h5fz._command (the wheel's `h5fz` console command) in a clone, where
    the package has no bin/h5fz: a message that says how to get it, exit 1,
    no exception."""
    from h5fz import _command
    if os.access(_command.PROGRAM, os.X_OK):
        pytest.skip("this h5fz package ships its program (an installed wheel)")
    assert _command.main(["--version"]) == 1
    err = capsys.readouterr().err
    assert "no h5fz program" in err and "pip install ." in err, err
