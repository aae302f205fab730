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

import os
import struct

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


def compression_opts(preset="lossless", mode="abs", bound=None):
    """The h5py ``compression_opts`` tuple for a preset, mode and error bound.

    Lossless without a bound gives ``(1,)``; otherwise
    ``(preset, mode, bound_low32, bound_high32)``. A lossy preset needs a
    positive finite bound (the filter refuses it otherwise; we say so earlier).
    """
    p = preset_id(preset)
    m = mode_id(mode)
    if p not in PRESET_NAMES:
        raise ValueError("unknown preset id %d" % p)
    if m not in MODE_NAMES:
        raise ValueError("unknown error-bound mode id %d" % m)
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
    return (p, m, low, high)


def parse_opts(values):
    """Decode a user-layout cd_values sequence into a dict (preset, mode, bound)."""
    values = [int(v) for v in values]
    out = {"preset": values[0] if values else 0, "mode": 0, "bound": None}
    if len(values) > 1:
        out["mode"] = values[1]
    if len(values) > 3:
        out["bound"] = join_bound(values[2], values[3])
    out["preset_name"] = PRESET_NAMES.get(out["preset"], "?")
    out["mode_name"] = MODE_NAMES.get(out["mode"], "?")
    return out


def h5repack_filter(preset="lossless", mode="abs", bound=None, dataset=None):
    """The h5repack ``-f`` argument, e.g. ``UD=32850,0,1,1`` (optionally ``name:UD=...``)."""
    opts = compression_opts(preset, mode, bound)
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
    Returns the plugin folder.
    """
    d = plugin_dir()
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
    "compression_opts", "parse_opts", "h5repack_filter", "plugin_dir", "plugin_path",
    "register", "is_available",
]
