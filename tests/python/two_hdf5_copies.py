"""Child process for test_two_hdf5_copies.py: h5py's HDF5 and a second libhdf5
(given on the command line, loaded with ctypes, RTLD_LOCAL) in one process,
both using the one loaded plugin. Each library writes a file, reads the other's,
and the two read concurrently from two threads.

Prints "SAME COPY" and exits 3 when the given library is the one h5py already
uses (Debian's python3-h5py), so there would be only one copy.
"""

import ctypes
import os
import sys
import threading

import numpy as np
import h5py

FILTER_ID = 32850
FZM_MAGIC = b"FZM\x00"
SHAPE = (59, 32, 32)
CHUNKS = (15, 16, 16)


def mapped_paths():
    paths = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                paths.add(os.path.realpath(parts[5].strip()))
    return paths


class Hdf5Copy:
    """The few HDF5 calls needed, through ctypes (hid_t is 64-bit from 1.10)."""

    def __init__(self, path):
        lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        self.lib = lib
        hid = ctypes.c_int64
        for name, res, args in [
            ("H5open", ctypes.c_int, []),
            ("H5get_libversion", ctypes.c_int, [ctypes.POINTER(ctypes.c_uint)] * 3),
            ("H5Fcreate", hid, [ctypes.c_char_p, ctypes.c_uint, hid, hid]),
            ("H5Fopen", hid, [ctypes.c_char_p, ctypes.c_uint, hid]),
            ("H5Fclose", ctypes.c_int, [hid]),
            ("H5Screate_simple", hid, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p]),
            ("H5Sclose", ctypes.c_int, [hid]),
            ("H5Pcreate", hid, [hid]),
            ("H5Pset_chunk", ctypes.c_int, [hid, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]),
            ("H5Pset_filter", ctypes.c_int, [hid, ctypes.c_int, ctypes.c_uint, ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_uint)]),
            ("H5Pclose", ctypes.c_int, [hid]),
            ("H5Dcreate2", hid, [hid, ctypes.c_char_p, hid, hid, hid, hid, hid]),
            ("H5Dopen2", hid, [hid, ctypes.c_char_p, hid]),
            ("H5Dwrite", ctypes.c_int, [hid, hid, hid, hid, hid, ctypes.c_void_p]),
            ("H5Dread", ctypes.c_int, [hid, hid, hid, hid, hid, ctypes.c_void_p]),
            ("H5Dclose", ctypes.c_int, [hid]),
        ]:
            fn = getattr(lib, name)
            fn.restype = res
            fn.argtypes = args
        assert lib.H5open() >= 0
        v = [ctypes.c_uint() for _ in range(3)]
        lib.H5get_libversion(*[ctypes.byref(x) for x in v])
        self.version = "%d.%d.%d" % tuple(x.value for x in v)
        # data symbols: valid after H5open; these names exist in 1.8 to 1.14
        self.dcpl_class = hid.in_dll(lib, "H5P_CLS_DATASET_CREATE_ID_g").value
        self.native_float = hid.in_dll(lib, "H5T_NATIVE_FLOAT_g").value
        self.ieee_f32le = hid.in_dll(lib, "H5T_IEEE_F32LE_g").value

    def check(self, value, what):
        assert value >= 0, "HDF5 %s: %s failed" % (self.version, what)
        return value

    def write(self, path, name, arr):
        lib = self.lib
        dims = (ctypes.c_uint64 * arr.ndim)(*arr.shape)
        cdims = (ctypes.c_uint64 * arr.ndim)(*CHUNKS)
        f = self.check(lib.H5Fcreate(path.encode(), 2, 0, 0), "H5Fcreate")  # H5F_ACC_TRUNC
        space = self.check(lib.H5Screate_simple(arr.ndim, dims, None), "H5Screate_simple")
        dcpl = self.check(lib.H5Pcreate(self.dcpl_class), "H5Pcreate")
        self.check(lib.H5Pset_chunk(dcpl, arr.ndim, cdims), "H5Pset_chunk")
        values = (ctypes.c_uint * 1)(1)  # lossless
        self.check(lib.H5Pset_filter(dcpl, FILTER_ID, 0, 1, values), "H5Pset_filter")
        d = self.check(lib.H5Dcreate2(f, name.encode(), self.ieee_f32le, space, 0, dcpl, 0), "H5Dcreate2")
        buf = np.ascontiguousarray(arr, dtype=np.float32)
        self.check(lib.H5Dwrite(d, self.native_float, 0, 0, 0, buf.ctypes.data), "H5Dwrite")
        for close, h in [(lib.H5Dclose, d), (lib.H5Pclose, dcpl), (lib.H5Sclose, space), (lib.H5Fclose, f)]:
            self.check(close(h), close.__name__)

    def read(self, path, name, shape):
        lib = self.lib
        out = np.empty(shape, dtype=np.float32)
        f = self.check(lib.H5Fopen(path.encode(), 0, 0), "H5Fopen")  # H5F_ACC_RDONLY
        d = self.check(lib.H5Dopen2(f, name.encode(), 0), "H5Dopen2")
        status = lib.H5Dread(d, self.native_float, 0, 0, 0, out.ctypes.data)
        lib.H5Dclose(d)
        lib.H5Fclose(f)
        self.check(status, "H5Dread")
        return out


def check_filtered(path, name):
    with h5py.File(path, "r") as f:
        d = f[name]
        assert d.id.get_num_chunks() == 4 * 2 * 2
        for i in range(d.id.get_num_chunks()):
            info = d.id.get_chunk_info(i)
            assert info.filter_mask == 0
            assert bytes(d.id.read_direct_chunk(info.chunk_offset)[1][:4]) == FZM_MAGIC


def main():
    other_path, workdir = sys.argv[1], sys.argv[2]
    before = mapped_paths()
    if os.path.realpath(other_path) in before:
        print("SAME COPY: h5py already uses %s" % os.path.realpath(other_path))
        return 3
    other = Hdf5Copy(other_path)
    assert os.path.realpath(other_path) in mapped_paths()
    print("h5py HDF5 %s, ctypes HDF5 %s" % (h5py.version.hdf5_version, other.version), flush=True)

    z, y, x = np.meshgrid(*[np.linspace(0, 3, n) for n in SHAPE], indexing="ij")
    arr = (np.sin(x + 2 * y) * np.cos(z) * 100).astype(np.float32)

    by_h5py = os.path.join(workdir, "by_h5py.h5")
    by_other = os.path.join(workdir, "by_other.h5")
    with h5py.File(by_h5py, "w") as f:
        f.create_dataset("x", data=arr, chunks=CHUNKS, compression=FILTER_ID, compression_opts=(1,))
    other.write(by_other, "x", arr)
    check_filtered(by_h5py, "x")
    check_filtered(by_other, "x")

    # each reads the other's file (and its own)
    with h5py.File(by_other, "r") as f:
        assert f["x"][()].tobytes() == arr.tobytes()
    assert other.read(by_h5py, "x", SHAPE).tobytes() == arr.tobytes()
    assert other.read(by_other, "x", SHAPE).tobytes() == arr.tobytes()

    # both libraries in the filter at once (ctypes releases the GIL)
    errors = []

    def other_reads():
        try:
            for _ in range(40):
                assert other.read(by_h5py, "x", SHAPE).tobytes() == arr.tobytes()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=other_reads)
    t.start()
    with h5py.File(by_other, "r") as f:
        for _ in range(40):
            assert f["x"][()].tobytes() == arr.tobytes()
    t.join()
    if errors:
        raise errors[0]
    print("OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
