"""h5fz's registration: where the plugin is (the folder on HDF5_PLUGIN_PATH,
the copy an installed package ships, a clone's build), register() to make
HDF5 in this process find it, and the quiet registration `import h5fz` and
FZ do once h5py is importable, as hdf5plugin does on import.
"""

import os
import warnings

from ._options import FILTER_ID

PLUGIN_FILE = "libH5Zfz.so"

_HERE = os.path.dirname(os.path.abspath(__file__))
# The repository this package sits in (tools/python/h5fz), when run from a
# clone; an installed package has its own copy of the plugin instead (plugin/).
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
_SHIPPED_PLUGIN_DIR = os.path.join(_HERE, "plugin")


def clone_version():
    """The version in the clone's CMakeLists.txt (project(H5ZFZ VERSION ...)),
    the one place it is written; "unknown" outside a clone."""
    import re
    try:
        with open(os.path.join(_REPO, "CMakeLists.txt")) as f:
            found = re.search(r"project\(H5ZFZ VERSION ([0-9][0-9.]*)", f.read())
    except OSError:
        return "unknown"
    return found.group(1) if found else "unknown"


def _plugin_candidates():
    env = [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
    return env, [_SHIPPED_PLUGIN_DIR, os.path.join(_REPO, "build", "plugin")]


def plugin_dir():
    """Folder holding libH5Zfz.so.

    The first entry of HDF5_PLUGIN_PATH that holds the plugin, else the
    plugin this package ships (an installed package: h5fz/plugin/), else
    <repo>/build/plugin (run from a clone), else the first entry of
    HDF5_PLUGIN_PATH (or <repo>/build/plugin when that is unset).
    """
    env, own = _plugin_candidates()
    for d in env + own:
        if os.path.isfile(os.path.join(d, PLUGIN_FILE)):
            return os.path.abspath(d)
    return os.path.abspath(env[0] if env else own[1])


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
        env, own = _plugin_candidates()
        looked = env + [own[0] + " (shipped with the package)", own[1] + " (a clone's build)"]
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


def _register_quietly():
    """register() once h5py is importable, as hdf5plugin registers on import:
    FZ(...) then works with nothing else set. A missing plugin is a warning
    here (HDF5 may find one on its own default path); h5py's error names it
    when a dataset is created."""
    global _REGISTERED
    if _REGISTERED:
        return
    try:
        import h5py  # noqa: F401
    except ImportError:
        return
    try:
        register(h5py)
        _REGISTERED = True
    except FileNotFoundError as e:
        warnings.warn(str(e), RuntimeWarning, stacklevel=3)


_REGISTERED = False


def _register_on_import():
    """Register the plugin when h5py is installed, as hdf5plugin does on
    import: a plain h5py read after ``import h5fz`` then finds the filter,
    and so does :func:`read`'s fallback through HDF5 (issue 28 item 16).
    Quiet: without h5py or without a plugin nothing happens here (HDF5 may
    find one on its own default path; :class:`FZ` and :func:`register` say
    what is missing)."""
    global _REGISTERED
    try:
        import h5py
    except Exception:  # noqa: BLE001  (no or a broken h5py: h5fz works without it)
        return
    try:
        register(h5py)
        _REGISTERED = True
    except FileNotFoundError:
        pass
