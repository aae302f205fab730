"""h5fz: a small helper for using the H5Z-FZ HDF5 filter from h5py.

No dependency beyond the standard library (numpy and h5py are used only when
you pass arrays, call :func:`register`, or have h5py installed: then importing
h5fz registers the plugin for h5py, as hdf5plugin does on import).

    import h5fz                      # registers the plugin it ships (or a clone's build)
    import h5py
    with h5py.File("out.h5", "w") as f:
        f.create_dataset("t", data=array, chunks=(64, 64, 64),
                         compression=h5fz.FILTER_ID,
                         compression_opts=h5fz.compression_opts("lossless"))

compression_opts layout (the "user layout", see docs/CD_VALUES.md):

    cd[0] preset id, cd[1] error-bound mode,
    cd[2] low 32 bits and cd[3] high 32 bits of the bound as IEEE-754 binary64,
    lossy presets: cd[4], cd[5] the missing value (same split; 4294967295,
    4294967295 = none), presets 5 and 6: cd[6] the spline tuning (0 off,
    1 ratio-first, 2 quality-first, 3 manual), with 3 cd[7], cd[8] alpha and
    cd[9], cd[10] beta (same split).

    h5fz.compression_opts("cuszhi-cr", "noa", 1e-3, tuning="quality-first")
    h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, tuning="manual", alpha=1.5, beta=4)

The code sits in private modules, one seam each: _options (presets, modes,
compression_opts, parse_opts), _dataset (chunks, global_abs_bound),
_register (finding and registering the plugin), _fz (FZ), _inspect (the
stored layout, filter_values, inspect), _read (read), _write (write),
_compare (compare), _chunk_codec (chunks to frames without HDF5) with _zarr
(FZCodec, the numcodecs / Zarr v2 codec) and _zarr3 (FZZarr3, the
zarr-python 3 codec), imported with numcodecs or zarr only when used.
Import from h5fz itself: those module names are not an interface.
"""

try:  # written into the installed package by its build (pyproject.toml), from CMakeLists.txt
    from ._version import __version__
except ImportError:  # a clone's tools/python on sys.path: the clone's CMakeLists.txt says it
    from ._register import clone_version as _clone_version
    __version__ = _clone_version()
    del _clone_version

from ._options import (
    AVAILABLE_PRESETS, DEFAULT_SPLINE_TUNING, FILTER_ID, FILTER_NAME, LOSSY_PRESETS, MAX_SPLINE_ALPHA_BETA,
    MODE_NAMES, MODES, NO_MISSING_WORD, PRESET_MODES, PRESET_NAMES, PRESET_TABLE, PRESETS, SPLINE_PRESETS,
    SPLINE_TUNING_NAMES, SPLINE_TUNINGS, compression_opts, h5repack_filter, join_bound, missing_value_for,
    mode_id, parse_opts, preset_id, spline_tuning_id, split_bound,
)
from ._dataset import SUGGESTED_CHUNK_BYTES, chunks, global_abs_bound, row_blocks
from ._register import PLUGIN_FILE, _register_on_import, is_available, plugin_dir, plugin_path, register
from ._fz import FZ
from ._inspect import (
    ELEMENT_CLASSES, STORED_FIXED_WORDS, STORED_LAYOUT_VERSION, STORED_MARKER, STORED_MARKER_MASK,
    filter_values, inspect, is_stored_layout, parse_stored,
)

__all__ = [
    "FILTER_ID", "FILTER_NAME", "PLUGIN_FILE", "PRESET_TABLE", "PRESETS", "PRESET_NAMES", "MODES",
    "MODE_NAMES", "LOSSY_PRESETS", "AVAILABLE_PRESETS", "PRESET_MODES", "preset_id", "mode_id", "split_bound", "join_bound",
    "SPLINE_TUNINGS", "SPLINE_TUNING_NAMES", "DEFAULT_SPLINE_TUNING", "SPLINE_PRESETS", "MAX_SPLINE_ALPHA_BETA",
    "NO_MISSING_WORD", "spline_tuning_id",
    "compression_opts", "missing_value_for", "parse_opts", "h5repack_filter", "plugin_dir", "plugin_path",
    "register", "is_available", "STORED_MARKER", "STORED_LAYOUT_VERSION", "is_stored_layout", "parse_stored",
    "filter_values", "chunks", "SUGGESTED_CHUNK_BYTES", "FZ", "inspect", "global_abs_bound", "compare", "row_blocks",
    "read", "write",
]


def read(dataset, selection=None, device=None, threads=0):
    """``dataset[selection]`` of an H5Z-FZ dataset, decoded many chunks at a time.

    Reads the chunks the selection touches as stored (read_direct_chunk) and
    decodes them together through the plugin's engine: on all cores
    (``threads``, 0 = all) into a NumPy array, or with ``device="cuda"``
    (``"cuda:N"``) on the GPU into a CuPy array that PyTorch and JAX take
    without a copy (``torch.from_dlpack``). ``selection``: slices with step 1,
    integers, one Ellipsis. Exactly the values ``dataset[selection]`` gives.
    See h5fz._read.
    """
    from ._read import read as _read
    return _read(dataset, selection=selection, device=device, threads=threads)


def write(dataset, data, selection=None, threads=0, device=None):
    """``dataset[selection] = data`` for an H5Z-FZ dataset, encoded many chunks at a time.

    Encodes the chunks the selection covers together through the plugin's
    engine into the very frames the filter writes for them, and stores them
    with write_direct_chunk, so every reader reads what
    ``dataset[selection] = data`` would have stored. Whole chunks, edge
    chunks padded with the fill value and parts of chunks merged into what
    they hold, as HDF5 builds them. ``data``: a NumPy array (encoded on all
    cores, ``threads``, 0 = all; or on the GPU: ``device`` None/"auto" for
    large chunks, "cuda", "cuda:N"), or a GPU array (CuPy, or the CUDA array
    interface / DLPack: PyTorch, JAX, Numba), encoded on its GPU with only
    the frames crossing to the host (``device="cpu"``: copied to the host a
    group of chunks at a time instead). See h5fz._write.
    """
    from ._write import write as _write
    return _write(dataset, data, selection=selection, threads=threads, device=device)


def compare(path_a, path_b, plot=None):
    """Per dataset of two files: max abs and rel error, PSNR, both ratios (h5fz.compare module)."""
    from ._compare import compare as _compare
    return _compare(path_a, path_b, plot=plot)


def __getattr__(name):
    # h5fz.FZCodec (the Zarr v2 codec) imports numcodecs: only when asked for.
    if name == "FZCodec":
        from ._zarr import FZCodec
        return FZCodec
    # h5fz.FZZarr3 (the zarr-python 3 codec) imports zarr: only when asked for.
    if name == "FZZarr3":
        from ._zarr3 import FZZarr3
        return FZZarr3
    raise AttributeError("module 'h5fz' has no attribute %r" % name)


_register_on_import()
