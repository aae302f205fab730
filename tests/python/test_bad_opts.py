"""Wrong compression_opts must make create_dataset fail (set_local refuses them:
h5py adds the filter as optional, so a later failure would silently store the
chunks raw) with a message that names the problem.

h5py's exception text carries the innermost message of HDF5's error stack,
which is the filter's own (checked under HDF5 1.10, 1.14 and 2.0):
  ValueError: Unable to create dataset (H5Z-FZ: unknown preset 99 in cd_values[0] ...)
The full stack, printed to stderr by a child process with h5py's error
silencing off, must carry it too."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import h5py

import h5fz
from conftest import HERE, REPO

pytestmark = pytest.mark.usefixtures("plugin")


def _b(x):
    return h5fz.split_bound(x)


# The first id past the preset table (h5fz.PRESET_TABLE, generated from the engine's).
_FIRST_UNKNOWN_PRESET = max(h5fz.PRESET_NAMES) + 1

# id, cd_values, extra create_dataset kwargs, words of which one must appear in the message
BAD = [
    ("unknown-preset-99", (99,), {}, ["preset"]),
    ("unknown-preset-%d" % _FIRST_UNKNOWN_PRESET, (_FIRST_UNKNOWN_PRESET, 0) + _b(1e-3), {}, ["preset"]),
    ("lossy-preset-4-without-bound", (4,), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("lossy-preset-2-mode-only", (2, 0), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("bad-mode-lossless", (1, 7), {}, ["mode"]),
    ("bad-mode-lossy", (2, 9) + _b(1e-3), {}, ["mode", "not available", "unavailable", "not implemented"]),
    ("zero-bound", (3, 0, 0, 0), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("negative-bound", (4, 0) + _b(-1e-3), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("nan-bound", (2, 1) + _b(float("nan")), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("inf-bound", (6, 0) + _b(float("inf")), {}, ["bound", "not available", "unavailable", "not implemented"]),
    ("lossy-after-shuffle", (2, 0) + _b(1e-3), {"shuffle": True},
     ["shuffle", "after", "order", "not available", "unavailable", "not implemented"]),
]
# Every mode a built lossy preset does not honour strictly (REL for the
# predictor presets), from the preset table.
BAD += [("%s-refuses-%s" % (name, mode), (pid, h5fz.MODES[mode]) + _b(1e-3), {}, ["cannot guarantee"])
        for pid, name, lossy, available, modes in h5fz.PRESET_TABLE if lossy and available
        for mode in h5fz.MODES if mode not in modes]

CHILD = r"""
import json, sys
sys.path[:0] = [%(tools)r, %(here)r]
import h5fz
h5fz.register()
import h5py, h5py._errors
import numpy as np
h5py._errors.unsilence_errors()
opts, kw = json.loads(sys.argv[1]), json.loads(sys.argv[2])
with h5py.File(sys.argv[3], "w") as f:
    try:
        f.create_dataset("d", shape=(40, 40), dtype="<f4", chunks=(20, 20),
                         compression=h5fz.FILTER_ID, compression_opts=tuple(opts), **kw)
        print("CREATED")
    except Exception as e:
        print("EXCEPTION %%s: %%s" %% (type(e).__name__, e))
"""


def _child(tmp_path, opts, kw):
    code = CHILD % {"tools": os.path.join(REPO, "tools", "python"), "here": HERE}
    r = subprocess.run([sys.executable, "-c", code, json.dumps(list(opts)), json.dumps(kw),
                        str(tmp_path / "child.h5")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout, r.stderr


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_opts_refused(tmp_path, case):
    _id, opts, kw, words = case
    path = tmp_path / "bad.h5"
    with h5py.File(path, "w") as f:
        with pytest.raises(Exception) as exc:
            f.create_dataset("d", shape=(40, 40), dtype="<f4", chunks=(20, 20),
                             compression=h5fz.FILTER_ID, compression_opts=opts, **kw)
        assert "d" not in f
        # the file stays usable
        f.create_dataset("ok", data=np.arange(10.0), chunks=(5,),
                         compression=h5fz.FILTER_ID, compression_opts=h5fz.compression_opts())
    text = str(exc.value)
    assert exc.type is ValueError, exc
    assert "H5Z-FZ" in text, text
    assert any(w in text.lower() for w in words), "no %s in h5py's message: %s" % (words, text)
    stdout, stderr = _child(tmp_path, opts, kw)
    assert "EXCEPTION" in stdout, "child created the dataset: %s" % stdout
    # the filter's message is in HDF5's error stack
    stack = stderr.lower()
    assert any(w in stack for w in words), \
        "no %s in HDF5's error stack for cd_values %s:\n%s\nh5py said: %s" % (words, opts, stderr, text)


def test_message_names_the_filter(tmp_path):
    stdout, stderr = _child(tmp_path, (99,), {})
    assert "EXCEPTION" in stdout
    low = stderr.lower()
    assert "fz" in low, stderr
    assert "99" in stderr, stderr
