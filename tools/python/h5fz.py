"""h5fz: a small helper for using the H5Z-FZ HDF5 filter from h5py.

No dependency beyond the standard library (numpy and h5py are used only when
you pass arrays or call :func:`register`).

    import h5fz                      # tools/python on sys.path
    h5fz.register()                  # or export HDF5_PLUGIN_PATH=<repo>/build/plugin
    import h5py
    with h5py.File("out.h5", "w") as f:
        f.create_dataset("t", data=array, chunks=(64, 64, 64),
                         compression=h5fz.FILTER_ID,
                         compression_opts=h5fz.compression_opts("lossless"))

compression_opts layout (the "user layout", see docs/CD_VALUES.md):

    cd[0] preset id, cd[1] error-bound mode,
    cd[2] low 32 bits and cd[3] high 32 bits of the bound as IEEE-754 binary64.
"""

import ctypes
import os
import struct
import warnings

FILTER_ID = 32850
FILTER_NAME = "H5Z-FZ"
PLUGIN_FILE = "libH5Zfz.so"

# Stable ids: they are stored in files, never renumbered.
PRESETS = {
    "default": 0,
    "lossless": 1,
    "pfpl": 2,
    "fzgpu": 3,
    "cusz": 4,
    "cuszhi-tp": 5,
    "cuszhi-cr": 6,
}
LOSSY_PRESETS = frozenset({2, 3, 4, 5, 6})
PRESET_NAMES = {v: k for k, v in PRESETS.items()}

MODES = {
    "abs": 0,  # absolute: |x - x'| <= bound
    "noa": 1,  # relative to the chunk's value range (SZ's "REL")
    "rel": 2,  # point-wise relative: |x - x'| <= bound * |x|
}
MODE_NAMES = {v: k for k, v in MODES.items()}

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _lookup(table, value, what):
    if isinstance(value, str):
        key = value.strip().lower().replace("_", "-")
        if key not in table:
            raise ValueError("unknown %s %r (known: %s)" % (what, value, ", ".join(table)))
        return table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be a name or an int, not %r" % (what, value))
    return int(value)


def preset_id(preset):
    """Preset id for a name ("lossless", "pfpl", ...) or an int (passed through)."""
    return _lookup(PRESETS, preset, "preset")


def mode_id(mode):
    """Mode id for a name ("abs", "noa", "rel") or an int (passed through)."""
    return _lookup(MODES, mode, "mode")


def split_bound(bound):
    """A double as (low 32 bits, high 32 bits) of its IEEE-754 binary64 pattern."""
    (bits,) = struct.unpack("<Q", struct.pack("<d", float(bound)))
    return bits & 0xFFFFFFFF, bits >> 32


def join_bound(low, high):
    """Inverse of :func:`split_bound`."""
    bits = (int(high) & 0xFFFFFFFF) << 32 | (int(low) & 0xFFFFFFFF)
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def missing_value_for(missing, dtype=None):
    """The missing value as the double the filter accepts for a ``dtype`` variable.

    ``dtype``: "float32" / "float64" (or "f4", "f8", a numpy dtype or type).
    float32 rounds to the nearest float32, like ``float(numpy.float32(missing))``:
    a float32 dataset compares its elements with that double and refuses any
    other (h5repack then copies the variable unfiltered). Without ``dtype``,
    a numpy float32/float64 scalar says its own; anything else is taken as
    float32, with a warning saying so.
    """
    name = _float_dtype_name(dtype)
    if name is None:
        name = _float_dtype_name(getattr(missing, "dtype", None))
    if name is None:
        warnings.warn("h5fz: missing value %r taken as float32 (no dtype given); pass dtype=\"float64\" "
                      "for a double variable" % (missing,), stacklevel=3)
        name = "float32"
    value = float(missing)
    if name == "float64":
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        raise ValueError("missing value %r is outside float32's range (dtype=\"float64\" for a double variable)"
                         % (missing,)) from None


def _float_dtype_name(dtype):
    """'float32', 'float64' or None (no dtype given); ValueError for any other type."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        text = dtype
    elif dtype is float:
        text = "float64"  # Python's float is a double
    else:
        text = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    key = text.strip().lower().lstrip("<>=|")
    if key in ("float32", "f4"):
        return "float32"
    if key in ("float64", "f8"):
        return "float64"
    raise ValueError("dtype must be float32 or float64 (a missing value applies to float variables), not %r"
                     % (dtype,))


def compression_opts(preset="lossless", mode="abs", bound=None, missing=None, dtype=None):
    """The h5py ``compression_opts`` tuple for a preset, mode and error bound.

    Lossless without a bound gives ``(1,)``; otherwise
    ``(preset, mode, bound_low32, bound_high32)``. A lossy preset needs a
    positive finite bound (the filter refuses it otherwise; we say so earlier).

    ``missing`` (lossy presets only): the missing value, e.g. a netCDF
    variable's ``_FillValue``, appended as two more words (low and high 32
    bits of the IEEE-754 double, like the bound). The filter keeps it
    bit-exact in place of HDF5's fill value. ``dtype`` ("float32" or
    "float64") is the variable's type: the value is rounded to it (see
    :func:`missing_value_for`), since a float32 dataset refuses a double that
    is not a float32.
    """
    p = preset_id(preset)
    m = mode_id(mode)
    if p not in PRESET_NAMES:
        raise ValueError("unknown preset id %d" % p)
    if m not in MODE_NAMES:
        raise ValueError("unknown error-bound mode id %d" % m)
    if missing is not None and p not in LOSSY_PRESETS:
        raise ValueError("a missing value applies to lossy presets, not %s" % PRESET_NAMES[p])
    _float_dtype_name(dtype)  # a wrong dtype is refused even without a missing value
    if bound is None:
        if p in LOSSY_PRESETS:
            raise ValueError("preset %s is lossy: give an error bound" % PRESET_NAMES[p])
        if m == 0:
            return (p,)
        return (p, m)
    b = float(bound)
    if not (b > 0.0 and b != float("inf")):
        raise ValueError("error bound must be positive and finite, got %r" % bound)
    low, high = split_bound(b)
    if missing is None:
        return (p, m, low, high)
    m_low, m_high = split_bound(missing_value_for(missing, dtype))
    return (p, m, low, high, m_low, m_high)


def parse_opts(values):
    """Decode a user-layout cd_values sequence into a dict (preset, mode, bound)."""
    values = [int(v) for v in values]
    out = {"preset": values[0] if values else 0, "mode": 0, "bound": None}
    if len(values) > 1:
        out["mode"] = values[1]
    if len(values) > 3:
        out["bound"] = join_bound(values[2], values[3])
    out["missing"] = join_bound(values[4], values[5]) if len(values) == 6 else None
    out["preset_name"] = PRESET_NAMES.get(out["preset"], "?")
    out["mode_name"] = MODE_NAMES.get(out["mode"], "?")
    return out


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
    """Decode the stored layout (version 1) into a dict; raises ValueError if malformed."""
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


def h5repack_filter(preset="lossless", mode="abs", bound=None, dataset=None, missing=None, dtype=None):
    """The h5repack ``-f`` argument, e.g. ``UD=32850,0,1,1`` (optionally ``name:UD=...``).

    ``missing``, ``dtype``: see :func:`compression_opts`.
    """
    opts = compression_opts(preset, mode, bound, missing, dtype)
    spec = "UD=%d,0,%d,%s" % (FILTER_ID, len(opts), ",".join(str(v) for v in opts))
    return "%s:%s" % (dataset, spec) if dataset else spec


def plugin_dir():
    """Folder holding libH5Zfz.so.

    The first entry of HDF5_PLUGIN_PATH that holds the plugin, else
    <repo>/build/plugin when it holds it, else the first entry of
    HDF5_PLUGIN_PATH (or <repo>/build/plugin when that is unset).
    """
    env = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
    default = os.path.join(_REPO, "build", "plugin")
    for d in env + [default]:
        if os.path.isfile(os.path.join(d, PLUGIN_FILE)):
            return os.path.abspath(d)
    return os.path.abspath(env[0] if env else default)


def plugin_path():
    """Full path of libH5Zfz.so (may not exist: check before use)."""
    return os.path.join(plugin_dir(), PLUGIN_FILE)


def register(h5py_module=None):
    """Make HDF5 find the plugin in this process (and in child processes).

    Sets HDF5_PLUGIN_PATH when unset and, once h5py is importable, appends the
    plugin folder to HDF5's search path unless it is already there.
    Returns the plugin folder. Raises FileNotFoundError, naming every folder
    it looked in, when none holds libH5Zfz.so.
    """
    d = plugin_dir()
    if not os.path.isfile(os.path.join(d, PLUGIN_FILE)):
        looked = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
        looked.append(os.path.join(_REPO, "build", "plugin") + " (the default)")
        raise FileNotFoundError(
            "h5fz.register: %s not found; looked in %s. Build the plugin or set HDF5_PLUGIN_PATH to the "
            "folder that holds it." % (PLUGIN_FILE, ", ".join(looked)))
    if not os.environ.get("HDF5_PLUGIN_PATH"):
        os.environ["HDF5_PLUGIN_PATH"] = d
    if h5py_module is None:
        import h5py as h5py_module  # noqa: F401  (imported here on purpose)
    h5pl = h5py_module.h5pl
    known = set()
    for i in range(h5pl.size()):
        p = h5pl.get(i)
        known.add(os.path.abspath(p.decode() if isinstance(p, bytes) else p))
    if d not in known:
        h5pl.append(d.encode())
    return d


def is_available(h5py_module=None):
    """True when HDF5 in this process can load the filter."""
    if h5py_module is None:
        import h5py as h5py_module
    return bool(h5py_module.h5z.filter_avail(FILTER_ID))


__all__ = [
    "FILTER_ID", "FILTER_NAME", "PLUGIN_FILE", "PRESETS", "PRESET_NAMES", "MODES",
    "MODE_NAMES", "LOSSY_PRESETS", "preset_id", "mode_id", "split_bound", "join_bound",
    "compression_opts", "missing_value_for", "parse_opts", "h5repack_filter", "plugin_dir", "plugin_path",
    "register", "is_available", "STORED_MARKER", "STORED_LAYOUT_VERSION", "is_stored_layout", "parse_stored",
    "filter_values",
]
