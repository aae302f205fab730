"""Two libhdf5 copies in one process (h5py's, and Debian's loaded with ctypes)
share the one loaded plugin: each binds its own function table (set_local
reports which library it ran under), each reads the other's file, and both
read at the same time from two threads."""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
OTHER_HDF5 = "/usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so"

pytestmark = pytest.mark.usefixtures("plugin")


def test_two_hdf5_copies_in_one_process(tmp_path):
    if not os.path.exists(OTHER_HDF5):
        pytest.skip("Debian's libhdf5 not installed: %s" % OTHER_HDF5)
    env = dict(os.environ, H5Z_FZ_VERBOSE="1", H5Z_FZ_THREADS="2")
    r = subprocess.run([sys.executable, os.path.join(HERE, "two_hdf5_copies.py"), OTHER_HDF5, str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    log = "exit %d\nstdout: %s\nstderr: %s" % (r.returncode, r.stdout, r.stderr[-4000:])
    if r.returncode == 3 and "SAME COPY" in r.stdout:
        pytest.skip("this interpreter's h5py uses %s itself: only one HDF5 copy" % OTHER_HDF5)
    assert r.returncode == 0 and "OK" in r.stdout, log
    # set_local ran once under each library, with that library's table
    libraries = re.findall(r"H5Z-FZ: dataset set up: .*\(HDF5 (.*)\)\s*$", r.stderr, re.MULTILINE)
    assert len(libraries) == 2, log
    other = [p for p in libraries if os.path.realpath(p) == os.path.realpath(OTHER_HDF5)]
    assert len(other) == 1, (libraries, log)
    assert "filter returned failure" not in r.stderr, log
