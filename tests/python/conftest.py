"""Shared fixtures for the h5py / h5repack tests of H5Z-FZ.

Environment:
  HDF5_PLUGIN_PATH   folder of libH5Zfz.so (default <repo>/build/plugin)
  FZ_DATA            folder of the real fields (default <repo>/../shared/data)
  FZ_PY_A/B/C        interpreters for the cross-version tests (default: python3
                     on PATH, <repo>/.venv-h5py113/bin/python, /usr/bin/python3)
  FZ_REQUIRE_ALL_PY  when 1, a missing interpreter fails instead of skipping
"""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "python"))

import h5fz  # noqa: E402
import fz_samples  # noqa: E402

FZM_MAGIC = b"FZM\x00"

# Point HDF5 (this process and every child: writers, h5repack, h5dump, h5diff)
# at the plugin before h5py initialises HDF5.
_PLUGIN_DIR = h5fz.plugin_dir()
_prev = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
os.environ["HDF5_PLUGIN_PATH"] = os.pathsep.join([_PLUGIN_DIR] + [p for p in _prev if p != _PLUGIN_DIR])

import h5py  # noqa: E402

h5fz.register(h5py)


def pytest_report_header(config):
    return ["h5py %s, HDF5 %s, numpy %s, python %s" % (
                h5py.version.version, h5py.version.hdf5_version, np.__version__, sys.executable),
            "plugin: %s" % h5fz.plugin_path(),
            "real fields: %s" % fz_samples.data_dir()]


@pytest.fixture(scope="session")
def plugin():
    """The plugin's folder; fails the test when HDF5 cannot load the filter."""
    path = h5fz.plugin_path()
    assert os.path.isfile(path), "plugin not built: %s (build it or set HDF5_PLUGIN_PATH)" % path
    assert h5py.h5z.filter_avail(h5fz.FILTER_ID), \
        "HDF5 %s cannot load filter %d from %s" % (h5py.version.hdf5_version, h5fz.FILTER_ID, path)
    return _PLUGIN_DIR


@pytest.fixture(scope="session")
def data_dir():
    d = fz_samples.data_dir()
    assert os.path.isdir(d), "real fields missing: %s (set FZ_DATA)" % d
    return d


def fz_kwargs(**opts):
    return {"compression": h5fz.FILTER_ID, "compression_opts": h5fz.compression_opts(**opts)}


def chunk_grid(dset):
    return tuple(-(-s // c) for s, c in zip(dset.shape, dset.chunks))


def check_chunks_filtered(dset, expect_all=True):
    """Every stored chunk went through the filter (mask 0) and is an FZM frame.

    Returns (number of chunks, total stored bytes)."""
    dsid = dset.id
    n = dsid.get_num_chunks()
    if expect_all:
        assert n == int(np.prod(chunk_grid(dset))), "%s: %d chunks stored" % (dset.name, n)
    total = 0
    for i in range(n):
        info = dsid.get_chunk_info(i)
        assert info.filter_mask == 0, "%s chunk %s skipped the filter (mask %#x)" % (
            dset.name, info.chunk_offset, info.filter_mask)
        mask, raw = dsid.read_direct_chunk(info.chunk_offset)
        assert mask == 0
        assert len(raw) == info.size
        assert bytes(raw[:4]) == FZM_MAGIC, "%s chunk %s starts with %r" % (
            dset.name, info.chunk_offset, bytes(raw[:8]))
        total += len(raw)
    return n, total


def fz_filter_values(dset):
    """(flags, cd_values) of filter 32850 in a dataset's creation property list
    (read through HDF5 directly: h5py < 3.16 mangles more than 16 values)."""
    return h5fz.filter_values(dset)


def filter_codes(dset):
    """Filter ids of a dataset's pipeline, in order."""
    dcpl = dset.id.get_create_plist()
    # get_filter()[0] is right in every h5py (only its cd_values can be mangled)
    return [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]


def check_stored_values(dset, preset=1, mode=0, bound=None):
    """The stored cd_values parse and agree with the dataset."""
    flags, values = fz_filter_values(dset)
    p = h5fz.parse_stored(values)
    assert p["preset"] == preset and p["mode"] == mode, p
    if bound is not None:
        assert p["bound"] == bound, p
    assert p["chunk_dims"] == tuple(dset.chunks), (p["chunk_dims"], dset.chunks)
    if dset.dtype.kind in "iuf" and dset.dtype.subdtype is None:
        assert p["element_size"] == dset.dtype.itemsize, p
        assert p["element_class_name"] == {"i": "signed", "u": "unsigned", "f": "float"}[dset.dtype.kind], p
        if dset.dtype.itemsize > 1:
            assert p["byte_order_name"] == ("big" if dset.dtype.byteorder == ">" else "little"), p
    return p


def assert_same(a, b):
    """Bit-exact equality (NaN patterns included)."""
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.tobytes() == b.tobytes()


# ---- interpreters for the cross-version tests ----------------------------------

def _probe(py):
    try:
        r = subprocess.run([py, "-c", "import h5py, numpy; print(h5py.version.hdf5_version)"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if r.returncode != 0:
        return None, r.stderr.strip()[-500:]
    return r.stdout.strip().splitlines()[-1], ""


def _default_python3():
    # the first python3 on PATH that is not Debian's (that one is C)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "python3")
        if os.access(p, os.X_OK) and os.path.realpath(p) != os.path.realpath("/usr/bin/python3"):
            return p
    return None


INTERPRETERS = [
    ("A", "FZ_PY_A", _default_python3),
    ("B", "FZ_PY_B", lambda: os.path.join(REPO, ".venv-h5py113", "bin", "python")),
    ("C", "FZ_PY_C", lambda: "/usr/bin/python3"),
]


@pytest.fixture(scope="session")
def interpreters():
    """label -> dict(path, hdf5, error, explicit)."""
    out = {}
    for label, var, default in INTERPRETERS:
        explicit = bool(os.environ.get(var))
        path = os.environ.get(var) or default()
        if not path or not os.path.exists(path):
            out[label] = {"path": path, "hdf5": None, "error": "not found", "explicit": explicit}
            continue
        version, err = _probe(path)
        out[label] = {"path": path, "hdf5": version, "error": err, "explicit": explicit}
    return out


def require_interpreter(interpreters, label):
    info = interpreters[label]
    if info["hdf5"]:
        return info
    msg = "interpreter %s (%s) unusable: %s" % (label, info["path"], info["error"])
    if info["explicit"] or os.environ.get("FZ_REQUIRE_ALL_PY") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def sample_files(tmp_path_factory, interpreters, plugin, data_dir):
    """Runs write_sample.py under each usable interpreter; label -> (path or None, log)."""
    base = tmp_path_factory.mktemp("cross")
    out = {}
    for label, info in interpreters.items():
        if not info["hdf5"]:
            out[label] = (None, info["error"])
            continue
        path = str(base / ("written_by_%s.h5" % label))
        r = subprocess.run([info["path"], os.path.join(HERE, "write_sample.py"), path],
                           capture_output=True, text=True, timeout=300, env=dict(os.environ))
        log = "exit %d\nstdout: %s\nstderr: %s" % (r.returncode, r.stdout, r.stderr[-3000:])
        out[label] = (path if r.returncode == 0 else None, log)
    return out


@pytest.fixture(scope="session")
def hdf5_tools():
    tools = {}
    for name in ("h5repack", "h5dump", "h5diff"):
        p = shutil.which(name)
        assert p, "%s not found (apt-get install hdf5-tools)" % name
        tools[name] = p
    return tools


@pytest.fixture(scope="session")
def h5fz_tool():
    """The h5fz program built beside the plugin (FZ_H5FZ overrides)."""
    import h5fz
    path = os.environ.get("FZ_H5FZ") or os.path.join(os.path.dirname(h5fz.plugin_dir()), "tools", "h5fz")
    assert os.access(path, os.X_OK), "h5fz not built: %s (set FZ_H5FZ)" % path
    return os.path.abspath(path)
