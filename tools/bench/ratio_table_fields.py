"""ratio_table.py's fields: the real fields of --data, the ferret-datasets
variables (read through `nccopy -k nc4` and h5py) and the held-out public
fields of public_fields.py (read from its cache), each with its fill value and
non-fill range, and the chunk shape of a chunking (whole, 4mib).

Kept apart from the compressors and the tables so that what is measured (the
arrays, their ranges and chunks) reads on its own; the rules are in
ratio_table.py's docstring."""

import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

CHUNK_TARGET_BYTES = 4 << 20

# The real fields of ../shared/data/README.md: file, numpy dtype, shape (slow..fast).
REAL_FIELDS = (
    ("wmag91.float", "<f4", (91, 91, 91)),
    ("999x999.float", "<f4", (999, 999)),
    ("vorticity.128_128_41", "<f4", (41, 128, 128)),
    ("vorticity.512_512", "<f4", (512, 512)),
    ("pressure.384_384.f64", "<f8", (384, 384)),
)
# ferret-datasets: (label, file, variable).
FERRET_FIELDS = (
    ("levitus TEMP", "levitus_climatology.cdf", "TEMP"),
    ("levitus SALT", "levitus_climatology.cdf", "SALT"),
    ("etopo5 ROSE", "etopo5.cdf", "ROSE"),
)
FERRET_DIR = "/usr/share/ferret-vis/data"
# The field sets of --sets: the fields above (shared, ferret) and public_fields.py's (public).
SETS = ("shared", "ferret", "public")
DEFAULT_SETS = ("shared", "ferret")


class Field:
    """One array to compress: name, data, fill value (or None) and where it came from."""

    def __init__(self, name, data, fill, source):
        self.name, self.data, self.fill, self.source = name, data, fill, source
        self.fill_mask = np.zeros(data.shape, bool) if fill is None else (data == fill)
        valid = np.isfinite(data) & ~self.fill_mask
        self.valid = valid
        self.lo, self.hi = float(data[valid].min()), float(data[valid].max())
        self.value_range = self.hi - self.lo


# ---- fields ---------------------------------------------------------------------------

def wanted(name, patterns):
    return not patterns or any(p.lower() in name.lower() for p in patterns)


def load_real_fields(data_dir, patterns):
    fields = []
    for name, dtype, shape in REAL_FIELDS:
        if not wanted(name, patterns):
            continue
        path = os.path.join(data_dir, name)
        if not os.path.exists(path):
            sys.exit("ratio_table: missing real field %s (set --data or FZ_DATA)" % path)
        array = np.fromfile(path, dtype=dtype)
        if array.size != math.prod(shape):
            sys.exit("ratio_table: %s holds %d elements, expected shape %s" % (path, array.size, shape))
        fields.append(Field(name, array.reshape(shape), None, path))
    return fields


def load_ferret_fields(ferret_dir, patterns, h5py):
    """The ferret-datasets variables, through `nccopy -k nc4` and h5py."""
    chosen = [f for f in FERRET_FIELDS if wanted(f[0], patterns)]
    if not chosen:
        return []
    if shutil.which("nccopy") is None:
        sys.exit("ratio_table: nccopy not found (Debian netcdf-bin) to read the ferret fields; "
                 "leave them out with --fields")
    fields = []
    with tempfile.TemporaryDirectory(prefix="ratio_table-") as tmp:
        for label, filename, variable in chosen:
            path = os.path.join(ferret_dir, filename)
            if not os.path.exists(path):
                sys.exit("ratio_table: missing %s (Debian ferret-datasets; set --ferret-dir, or leave it out "
                         "with --fields)" % path)
            nc4 = os.path.join(tmp, "%s.%s.nc" % (filename, variable))
            subprocess.run(["nccopy", "-k", "nc4", "-V", variable, path, nc4], check=True)
            with h5py.File(nc4, "r") as f:
                ds = f[variable]
                array = ds[()]
                marker = ds.attrs.get("_FillValue", ds.attrs.get("missing_value"))
            fill, note = None, "no _FillValue"
            if marker is not None:
                marker = np.asarray(marker, dtype=array.dtype).reshape(-1)[0]
                count = int(np.count_nonzero(array == marker))
                if count:
                    fill, note = marker, "_FillValue %g on %d elements: the dataset's fill value" % (marker, count)
                else:
                    note = "_FillValue %g on no element: no fill value declared" % marker
            fields.append(Field(label, array, fill, "%s variable %s (%s)" % (path, variable, note)))
    return fields


def load_public_fields(directory, patterns):
    """public_fields.py's held-out fields: extracted into directory when not cached
    yet (absent sources are reported by public_fields.py and left out), each with
    the fill value its manifest gives."""
    import public_fields
    fields = []
    entries = public_fields.extract(directory)
    if not entries:
        print("ratio_table: no public field in %s (python3 tools/bench/public_fields.py extract --install)"
              % directory, file=sys.stderr)
    for entry in entries:
        if not wanted(entry["name"], patterns):
            continue
        array = public_fields.load(entry, directory)
        fill, note = None, "no fill value"
        if entry["fill"] is not None:
            fill = np.asarray(entry["fill"], dtype=array.dtype).reshape(-1)[0]
            note = "fill %g on %d elements" % (fill, entry["fill_count"])
        fields.append(Field(entry["name"], array, fill, "%s %s: %s %s%s (%s)" % (
            entry["package"], entry["package_version"], entry["file"], entry["variable"],
            "" if entry["index"] is None else "[%d]" % entry["index"], note)))
    return fields


# ---- chunks -----------------------------------------------------------------------------

def chunk_shape(shape, itemsize, chunking):
    """The chunk shape of a chunking (see ratio_table.py's docstring for the 4mib rule)."""
    if chunking == "whole":
        return tuple(shape)
    chunk = list(shape)
    for axis in range(len(shape)):
        inner = itemsize * math.prod(shape[axis + 1:])    # bytes of one slice along this axis
        if inner * shape[axis] <= CHUNK_TARGET_BYTES:
            break                                          # this axis and the faster ones fit whole
        if inner <= CHUNK_TARGET_BYTES:
            pieces = math.ceil(inner * shape[axis] / CHUNK_TARGET_BYTES)
            chunk[axis] = math.ceil(shape[axis] / pieces)
            break
        chunk[axis] = 1
    return tuple(chunk)
