"""Writes the cross-version sample file with whatever h5py/HDF5 runs this script.

    HDF5_PLUGIN_PATH=<dir of libH5Zfz.so> python write_sample.py OUT.h5

The tests run it under every available interpreter (HDF5 2.0, 1.14, 1.10) and
read each result under their own HDF5 (test_cross_version.py). Prints the
HDF5 version it wrote with.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "python"))

import h5fz  # noqa: E402
import fz_samples  # noqa: E402


def main(out):
    h5fz.register()
    import h5py

    if not h5fz.is_available(h5py):
        sys.exit("write_sample.py: HDF5 %s cannot load filter %d from %s"
                 % (h5py.version.hdf5_version, h5fz.FILTER_ID, h5fz.plugin_dir()))
    opts = h5fz.compression_opts("lossless")
    with h5py.File(out, "w") as f:
        f.attrs["hdf5_version"] = h5py.version.hdf5_version
        f.attrs["h5py_version"] = h5py.version.version
        for name, (arr, chunks) in fz_samples.cross_version_arrays().items():
            f.create_dataset(name, data=arr, chunks=chunks,
                             compression=h5fz.FILTER_ID, compression_opts=opts)
        name, arr, chunks = fz_samples.cross_version_real()
        f.create_dataset(name, data=arr, chunks=chunks,
                         compression=h5fz.FILTER_ID, compression_opts=opts)
        # a dataset written in parts, with a fill value, leaving chunks unwritten
        d = f.create_dataset("partial", shape=(64, 64), dtype="<f4", chunks=(16, 16),
                             fillvalue=-1e34, compression=h5fz.FILTER_ID,
                             compression_opts=opts)
        d[5:30, 7:40] = fz_samples.smooth((25, 33), "<f4", 9)
    print(h5py.version.hdf5_version)


if __name__ == "__main__":
    main(sys.argv[1])
