"""Writes the HDF5 part of the golden corpus: files whose datasets were
compressed with H5Z-FZ by this version, each beside an uncompressed copy of
what it must read back as (`<name>.expected`: the data itself for lossless
presets, the values it decoded to when written for lossy ones). Every later
version must read them bit-exactly (tests/python/test_golden.py, under every
HDF5 version the tests run with). A new file may join a corpus; a committed
one is never rewritten.

    HDF5_PLUGIN_PATH=build/plugin python3 tests/golden/make_golden_h5.py tests/golden/v1.0/h5 ../shared/data
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "python"))
import h5fz  # noqa: E402


def main(out_dir, data_dir):
    wmag = np.fromfile(os.path.join(data_dir, "wmag91.float"), dtype="<f4").reshape(91, 91, 91)
    pressure = np.fromfile(os.path.join(data_dir, "pressure.384_384.f64"), dtype="<f8").reshape(384, 384)
    rng = np.random.default_rng(2026)
    compound = np.zeros(300, dtype=[("id", "<i4"), ("x", "<f4"), ("y", "<f8")])
    compound["id"] = np.arange(300)
    compound["x"] = np.linspace(0, 1, 300)
    compound["y"] = np.cos(np.arange(300) * 0.01)
    datasets = {
        # name: (data, chunks, compression_opts)
        "wmag_f32_3d": (wmag[:40, :40, :40], (16, 16, 16), h5fz.compression_opts("lossless")),
        "pressure_f64_be": (pressure[:100, :100].astype(">f8"), (64, 64), ()),
        "int16_ragged": ((np.arange(50 * 70).reshape(50, 70) % 300 - 150).astype("<i2"), (16, 32), (0,)),
        "uint8_noise": (rng.integers(0, 256, 5000, dtype=np.uint8), (1000,), (1,)),
        "compound16": (compound, (128,), (1,)),
        "float16_4d": (np.linspace(-2, 2, 2 * 3 * 4 * 5).astype("<f2").reshape(2, 3, 4, 5), (1, 3, 2, 5), (1,)),
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "lossless_v1.0.h5")
    with h5py.File(path, "w", libver="earliest") as f:
        f.attrs["written_by"] = "H5Z-FZ 0.1.0 (frame format 1.0), h5py %s, HDF5 %s" % (
            h5py.version.version, h5py.version.hdf5_version)
        for name, (data, chunks, opts) in datasets.items():
            kwargs = {"compression": h5fz.FILTER_ID}
            if opts:
                kwargs["compression_opts"] = opts
            f.create_dataset(name, data=data, chunks=chunks, **kwargs)
            f.create_dataset(name + ".expected", data=data)
    print("wrote", path, os.path.getsize(path), "bytes")
    write_lossy(out_dir, wmag, pressure)


def write_lossy(out_dir, wmag, pressure):
    """spline_v1.0.h5: the spline presets (5, 6) with their cd_values words
    (missing value, placeholder, tuning, manual alpha/beta), each beside what
    it decoded to when written (`<name>.expected`): later versions must give
    those exact values."""
    datasets = {
        "cuszhi_tp_noa_f32_3d": (wmag[:40, :40, :40], (16, 20, 40), h5fz.compression_opts("cuszhi-tp", "noa", 1e-3)),
        "cuszhi_cr_noa_f32_3d": (wmag[:40, :40, :40], (40, 40, 40), h5fz.compression_opts("cuszhi-cr", "noa", 1e-2)),
        "cuszhi_cr_abs_f64_quality": (pressure[:100, :100], (64, 64),
                                      h5fz.compression_opts("cuszhi-cr", "abs", 1e-5, tuning="quality-first")),
        "cuszhi_tp_abs_f64_manual_missing": (np.where(pressure[:70, :90] > 0.5, -999.0, pressure[:70, :90]), (70, 45),
                                             h5fz.compression_opts("cuszhi-tp", "abs", 1e-4, missing=-999.0,
                                                                   dtype="float64", tuning="manual", alpha=1.5,
                                                                   beta=4)),
        "cuszhi_cr_noa_f32_2d_ragged": (pressure[:100, :90].astype("<f4"), (33, 47),
                                        h5fz.compression_opts("cuszhi-cr", "noa", 1e-4)),
        "cuszhi_tp_noa_f32_1d_off": (wmag[5, 7, :].copy(), (50,), h5fz.compression_opts("cuszhi-tp", "noa", 1e-2,
                                                                                            tuning="off")),
    }
    path = os.path.join(out_dir, "spline_v1.0.h5")
    with h5py.File(path, "w", libver="earliest") as f:
        f.attrs["written_by"] = "H5Z-FZ 0.1.0 (frame format 1.0), h5py %s, HDF5 %s" % (
            h5py.version.version, h5py.version.hdf5_version)
        for name, (data, chunks, opts) in datasets.items():
            f.create_dataset(name, data=data, chunks=chunks, compression=h5fz.FILTER_ID, compression_opts=opts)
    with h5py.File(path, "a") as f:
        for name in datasets:
            f.create_dataset(name + ".expected", data=f[name][()])
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
