"""Hostile chunks give read errors (never crashes), frames do not depend on the
CPU thread count, and netCDF-C's nccopy can apply the filter."""

import os
import shutil
import subprocess
import sys

import pytest
import h5py

import fz_samples
from conftest import HERE, REPO, FZM_MAGIC, assert_same, check_chunks_filtered, fz_kwargs

pytestmark = pytest.mark.usefixtures("plugin")


def _damaged_file(path, how):
    a = fz_samples.smooth((64, 64), "<f4", 1)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=a, chunks=(32, 32), **fz_kwargs())
        mask, frame = d.id.read_direct_chunk((0, 0))
        frame = bytearray(frame)
        if how == "flip-payload":
            frame[len(frame) // 2] ^= 0x40
        elif how == "flip-header":
            frame[6] ^= 0x01
        elif how == "truncate":
            frame = frame[: len(frame) // 3]
        elif how == "magic-only":
            frame = bytearray(FZM_MAGIC)
        elif how == "garbage":
            frame = bytearray(fz_samples.noisy((len(frame),), "u1", 3).tobytes())
        elif how == "empty-ish":
            frame = bytearray(b"\x00")
        elif how == "huge-claims":
            frame = bytearray(FZM_MAGIC) + bytearray(b"\xff" * 60)
        d.id.write_direct_chunk((0, 0), bytes(frame), 0)
    return a


CHILD = r"""
import sys
sys.path[:0] = [%(tools)r]
import h5fz
h5fz.register()
import h5py, h5py._errors
h5py._errors.unsilence_errors()
with h5py.File(sys.argv[1], "r") as f:
    try:
        f["d"][0:32, 0:32]
        print("READ")
    except Exception as e:
        print("EXCEPTION %%s: %%s" %% (type(e).__name__, e))
    print("OTHER", int(f["d"][40, 40] == f["d"][40, 40]))
"""


@pytest.mark.parametrize("how", ["flip-payload", "flip-header", "truncate", "magic-only",
                                 "garbage", "empty-ish", "huge-claims"])
def test_damaged_chunk_is_a_read_error(tmp_path, how):
    path = tmp_path / "bad.h5"
    a = _damaged_file(path, how)
    with h5py.File(path, "r") as f:
        d = f["d"]
        with pytest.raises(OSError):
            d[0:32, 0:32]
        # the other chunks still read
        assert_same(d[32:, :], a[32:, :])
        assert_same(d[:32, 32:], a[:32, 32:])
    # in a child: no crash, and the filter says something on stderr
    r = subprocess.run([sys.executable, "-c", CHILD % {"tools": os.path.join(REPO, "tools", "python")},
                        str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "reader died (%d): %s" % (r.returncode, r.stderr[-2000:])
    assert "EXCEPTION" in r.stdout and "OTHER 1" in r.stdout, r.stdout
    assert "H5Z-FZ" in r.stderr or "H5Z-FZ" in r.stdout, r.stdout + r.stderr[-3000:]


WRITER = r"""
import sys
sys.path[:0] = [%(tools)r, %(here)r]
import h5fz, fz_samples
h5fz.register()
import h5py
arr = fz_samples.load_real("999x999.float")
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("d", data=arr, chunks=(500, 999), compression=h5fz.FILTER_ID,
                     compression_opts=h5fz.compression_opts())
"""


def _frames(path):
    with h5py.File(path, "r") as f:
        d = f["d"]
        return [bytes(d.id.read_direct_chunk(d.id.get_chunk_info(i).chunk_offset)[1])
                for i in range(d.id.get_num_chunks())]


def test_frames_independent_of_thread_count(tmp_path, data_dir):
    frames = {}
    for threads in ("1", "2", "5"):
        path = tmp_path / ("t%s.h5" % threads)
        env = dict(os.environ, H5Z_FZ_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", WRITER % {"tools": os.path.join(REPO, "tools", "python"),
                                                             "here": HERE}, str(path)],
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        frames[threads] = _frames(path)
    assert frames["1"] == frames["2"] == frames["5"]


def test_nccopy_applies_the_filter(tmp_path, data_dir):
    """netCDF-C (Debian's nccopy over HDF5 1.10) adds the filter per variable."""
    nccopy = shutil.which("nccopy")
    assert nccopy, "nccopy not found (apt-get install netcdf-bin)"
    src = tmp_path / "src.nc"
    field = fz_samples.load_real("wmag91.float")[:20]
    # a NetCDF-4 file is an HDF5 file; write it with h5py's netCDF-compatible subset
    ints = fz_samples.smooth((20, 91), "<i4", 2)
    cdl = tmp_path / "src.cdl"
    with open(cdl, "w") as f:
        f.write("netcdf src {\ndimensions:\n  z = 20 ;\n  y = 91 ;\n  x = 91 ;\n"
                "variables:\n  float w(z, y, x) ;\n  int n(z, y) ;\n}\n")
    ncgen = shutil.which("ncgen")
    assert ncgen, "ncgen not found (apt-get install netcdf-bin)"
    r = subprocess.run([ncgen, "-k", "nc4", "-o", str(src), str(cdl)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with h5py.File(src, "a") as f:
        f["w"][...] = field
        f["n"][...] = ints
    dst = tmp_path / "dst.nc"
    r = subprocess.run([nccopy, "-F", "w,32850,1", "-F", "n,32850,1", "-c", "z/10,y/91,x/91",
                        str(src), str(dst)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(dst, "r") as f:
        for name, arr in (("w", field), ("n", ints)):
            d = f[name]
            check_chunks_filtered(d)
            assert_same(d[()], arr)
        assert f["w"].id.get_storage_size() < field.nbytes
    dump = subprocess.run([shutil.which("ncdump") or "ncdump", "-hs", str(dst)],
                          capture_output=True, text=True)
    assert "32850" in dump.stdout, dump.stdout + dump.stderr
