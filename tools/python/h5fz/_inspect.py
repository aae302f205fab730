"""h5fz's inspection: the stored layout that set_local writes (parse_stored,
is_stored_layout; docs/CD_VALUES.md), a dataset's filter words read from
HDF5 itself (filter_values, through ctypes: h5py before 3.16 misreads more
than 16 of them), and inspect(), which reports every dataset of a file.
"""

import ctypes
import os
import struct

from ._options import FILTER_ID, MODE_NAMES, PRESET_NAMES, _tuning_fields, join_bound, parse_opts


# Stored layout (what set_local rewrites the user values into; docs/CD_VALUES.md).
# Version 1: 10 fixed words, then the chunk dims and the tuning words. Small
# fields share words so that old tools (h5py < 3.16: 16 words, h5dump 1.10: 20)
# show all of it for chunks up to rank 6.
STORED_MARKER = 0x5A46CD00          # word 0 without its low byte (the layout version)
STORED_MARKER_MASK = 0xFFFFFF00
STORED_LAYOUT_VERSION = 1
STORED_FIXED_WORDS = 10
_MAX_RANK = 32
_MAX_TUNING = 16
# name: (word, lowest bit, bits)
_STORED_FIELDS = {
    "layout_version": (0, 0, 8),
    "preset": (1, 0, 8),
    "mode": (1, 8, 8),
    "tuning_count": (1, 16, 8),
    "rank": (1, 24, 8),
    "bound_low": (2, 0, 32),
    "bound_high": (3, 0, 32),
    "element_class": (4, 0, 4),
    "byte_order": (4, 4, 1),
    "hdf5_sign": (4, 5, 1),
    "fill_defined": (4, 6, 1),
    "first_filter": (4, 7, 1),      # 1: H5Z-FZ is the pipeline's first filter
    "hdf5_class": (4, 8, 8),
    "element_size": (5, 0, 32),
    "float_sign_pos": (6, 0, 8),
    "float_exp_pos": (6, 8, 8),
    "float_exp_size": (6, 16, 8),
    "float_mant_pos": (6, 24, 8),
    "float_mant_size": (7, 0, 8),
    "float_exp_bias": (7, 8, 24),
    "fill_low": (8, 0, 32),
    "fill_high": (9, 0, 32),
}
_TYPE_RESERVED_MASK = 0xFFFF0000    # word 4: bits 16-31 are 0
ELEMENT_CLASSES = {0: "opaque", 1: "unsigned", 2: "signed", 3: "float"}


def is_stored_layout(values):
    return len(values) > 0 and (int(values[0]) & STORED_MARKER_MASK) == STORED_MARKER


def parse_stored(values):
    """Decode the stored layout (version 1) into a dict; raises ValueError if malformed.

    Besides the fields of each word (see docs/CD_VALUES.md): chunk_dims,
    tuning (the tuning words as given), bound, the names, fill_bytes, and
    the tuning words' fields as :func:`parse_opts` gives them: missing,
    spline_tuning, spline_tuning_name, spline_tuning_given, alpha, beta.
    """
    values = [int(v) for v in values]
    if not is_stored_layout(values):
        raise ValueError("not a stored H5Z-FZ layout (no marker): %r" % (values[:4],))
    version = values[0] & 0xFF
    if version != STORED_LAYOUT_VERSION:
        raise ValueError("unknown stored layout version %d" % version)
    fixed = STORED_FIXED_WORDS
    if len(values) < fixed:
        raise ValueError("stored layout too short: %d values" % len(values))
    out = {"marker": values[0] & STORED_MARKER_MASK}
    for name, (word, shift, bits) in _STORED_FIELDS.items():
        out[name] = (values[word] >> shift) & ((1 << bits) - 1)
    rank, ntune = out["rank"], out["tuning_count"]
    if rank > _MAX_RANK or ntune > _MAX_TUNING or len(values) != fixed + rank + ntune:
        raise ValueError("stored layout holds %d values, expected %d + rank %d + tuning %d"
                         % (len(values), fixed, rank, ntune))
    if values[4] & _TYPE_RESERVED_MASK:
        raise ValueError("stored layout word 4 has reserved bits set: 0x%08X" % values[4])
    out["chunk_dims"] = tuple(values[fixed:fixed + rank])
    out["tuning"] = tuple(values[fixed + rank:])
    out.update(_tuning_fields(out["preset"], out["tuning"]))
    out["bound"] = join_bound(out["bound_low"], out["bound_high"])
    out["preset_name"] = PRESET_NAMES.get(out["preset"], "?")
    out["mode_name"] = MODE_NAMES.get(out["mode"], "?")
    out["element_class_name"] = ELEMENT_CLASSES.get(out["element_class"], "?")
    out["byte_order_name"] = {0: "little", 1: "big"}[out["byte_order"]]
    if out["fill_defined"]:
        out["fill_bytes"] = struct.pack("<II", out["fill_low"], out["fill_high"])[:out["element_size"]]
    else:
        out["fill_bytes"] = None
    return out


_LIBHDF5 = {}


def _libhdf5_of_process():
    """The libhdf5 already loaded in this process (h5py's copy), through ctypes."""
    if "lib" in _LIBHDF5:
        return _LIBHDF5["lib"]
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if base.startswith("libhdf5") and ".so" in base and "_hl" not in base and path not in seen:
                seen.append(path)
    for path in seen:
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL)
            fn = lib.H5Pget_filter_by_id2
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_uint),
                       ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_uint),
                       ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint)]
        _LIBHDF5["lib"] = lib
        return lib
    raise RuntimeError("no libhdf5 with H5Pget_filter_by_id2 loaded in this process")


def filter_values(obj, filter_id=FILTER_ID):
    """(flags, cd_values) of a filter in a dataset's (or a dcpl's) pipeline.

    h5py before 3.16 reads at most 16 cd_values correctly (get_filter and
    get_filter_by_id read past a 16-word buffer); this asks HDF5 directly with
    room for 256. Raises KeyError when the filter is not in the pipeline.
    """
    dcpl = obj.id.get_create_plist() if hasattr(obj, "id") and hasattr(obj.id, "get_create_plist") else obj
    lib = _libhdf5_of_process()
    flags = ctypes.c_uint(0)
    n = ctypes.c_size_t(256)
    buf = (ctypes.c_uint * 256)()
    # (no h5py get_filter here: before 3.16 it reads past its buffer)
    rc = lib.H5Pget_filter_by_id2(dcpl.id, filter_id, ctypes.byref(flags), ctypes.byref(n), buf, 0,
                                  None, None)
    if rc < 0:
        raise KeyError("filter %d not in the pipeline" % filter_id)
    count = min(n.value, 256)
    return flags.value, tuple(int(buf[i]) for i in range(count))


def inspect(path):
    """Every dataset of the HDF5 file at ``path``, as a list of dicts.

    Each holds ``name``, ``shape``, ``dtype``, ``chunks``, ``raw_bytes`` (the
    elements' bytes), ``stored_bytes`` (what the file holds for them),
    ``ratio`` (None when nothing is stored) and ``fz``: None when H5Z-FZ does
    not filter the dataset, else the filter's stored words decoded
    (:func:`parse_stored`: preset_name, mode_name, bound, chunk_dims, ...,
    or :func:`parse_opts` for words set by hand and never stored through
    the plugin). Needs h5py; the plugin is not needed to inspect.
    """
    import h5py
    found = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        raw = int(obj.size) * obj.dtype.itemsize if obj.shape is not None else 0
        stored = int(obj.id.get_storage_size())
        rec = {"name": "/" + name, "shape": obj.shape, "dtype": str(obj.dtype), "chunks": obj.chunks,
               "raw_bytes": raw, "stored_bytes": stored, "ratio": raw / stored if stored else None, "fz": None}
        try:
            _flags, values = filter_values(obj)
        except KeyError:
            values = None
        if values is not None:
            rec["fz"] = parse_stored(values) if is_stored_layout(values) else parse_opts(values)
        found.append(rec)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found
