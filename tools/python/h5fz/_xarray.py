"""xarray's ``engine="h5fz"`` (issue 33): netCDF-4 / HDF5 files opened as
h5netcdf opens them, with every H5Z-FZ variable read through h5fz.read (many
chunks decoded at once, all cores or the GPU) instead of HDF5's
one-chunk-at-a-time filter.

Everything but the reading of H5Z-FZ variables is xarray's h5netcdf backend:
dimensions, coordinates, attributes, groups, CF decoding (scale, offset,
_FillValue masking, times), lazy loading, and ``encoding["preferred_chunks"]``
(the HDF5 chunks), so ``chunks={}`` gives Dask chunks aligned with them.
Values are exactly those ``engine="h5netcdf"`` gives (the same frames,
decoded by the same engine).

    import xarray as xr
    ds = xr.open_dataset("out.nc", engine="h5fz")            # registered by the package's entry point
    ds = xr.open_dataset("out.nc", engine="h5fz", chunks={})  # Dask, one task per HDF5 chunk
"""

import numpy as np
from xarray.backends.common import BackendEntrypoint
from xarray.backends.h5netcdf_ import H5NetCDFArrayWrapper, H5NetCDFStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.variable import Variable


def _is_fz(h5_dataset):
    """Whether H5Z-FZ is among an HDF5 dataset's filters."""
    from . import FILTER_ID
    dcpl = h5_dataset.id.get_create_plist()
    return any(dcpl.get_filter(i)[0] == FILTER_ID for i in range(dcpl.get_nfilters()))


def _box_of(key, shape):
    """An xarray basic key (slices of any step, integers) as the step-1 box
    h5fz.read takes, and the NumPy index that picks the key's elements out
    of that box."""
    box, pick = [], []
    for k, n in zip(key, shape):
        if isinstance(k, slice):
            wanted = range(*k.indices(n))
            if len(wanted) == 0:
                box.append(slice(0, 0))
                pick.append(slice(None))
                continue
            lo, hi = min(wanted[0], wanted[-1]), max(wanted[0], wanted[-1]) + 1
            box.append(slice(lo, hi))
            if k.step is None or k.step == 1:
                pick.append(slice(None))
            else:
                pick.append(np.asarray(wanted) - lo)
        else:
            i = int(k)
            box.append(slice(i, i + 1))
            pick.append(0)
    return tuple(box), tuple(pick)


class FZArrayWrapper(H5NetCDFArrayWrapper):
    """An H5Z-FZ variable's values, read by h5fz.read for each basic key."""

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC, self._getitem)

    def _getitem(self, key):
        from ._read import read
        box, pick = _box_of(key, self.shape)
        with self.datastore.lock:
            h5_dataset = self.get_array(needs_lock=False)._h5ds
            values = read(h5_dataset, box, device=self.datastore.fz_device, threads=self.datastore.fz_threads)
        # One axis at a time: NumPy would pair several index arrays up.
        for axis in reversed(range(len(pick))):
            p = pick[axis]
            if isinstance(p, slice):
                continue
            values = np.take(values, p, axis=axis)
        return values


class FZStore(H5NetCDFStore):
    """h5netcdf's store, its H5Z-FZ variables read through h5fz.read."""

    fz_device = None
    fz_threads = 0

    def open_store_variable(self, name, var):
        variable = super().open_store_variable(name, var)
        if var.chunks and _is_fz(var._h5ds):
            data = indexing.LazilyIndexedArray(FZArrayWrapper(name, self))
            variable = Variable(variable.dims, data, variable.attrs, variable.encoding)
        return variable


class H5FZBackendEntrypoint(BackendEntrypoint):
    """``xarray.open_dataset(path, engine="h5fz")``: h5netcdf's reading of
    netCDF-4 / HDF5 files, with H5Z-FZ variables decoded many chunks at a
    time (h5fz.read). ``device``: None/"auto", "cpu", "cuda" (decoded on the
    GPU, then copied to the host); ``threads``: CPU threads (0 = all)."""

    description = "netCDF-4/HDF5 files with H5Z-FZ variables, decoded many chunks at a time (h5fz.read)"
    url = "https://github.com/h5z-fz (README: netCDF-4: nccopy and xarray)"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
                               "concat_characters", "decode_coords", "use_cftime", "decode_timedelta", "group",
                               "lock", "phony_dims", "device", "threads")

    def guess_can_open(self, filename_or_obj):
        return False  # chosen by name only: h5netcdf and netcdf4 stay the defaults

    def open_dataset(self, filename_or_obj, *, mask_and_scale=True, decode_times=True, concat_characters=True,
                     decode_coords=True, drop_variables=None, use_cftime=None, decode_timedelta=None, group=None,
                     lock=None, phony_dims=None, device=None, threads=0):
        if device not in (None, "auto", "cpu"):
            raise ValueError("engine='h5fz': device=%r: xarray holds NumPy arrays, so decode on the host "
                             "(None, 'auto', 'cpu'); read GPU arrays with h5fz.read(..., device='cuda')" % (device,))
        store = FZStore.open(filename_or_obj, group=group, lock=lock, phony_dims=phony_dims)
        store.fz_device = "cpu" if device == "cpu" else None
        store.fz_threads = int(threads)
        with store._manager.acquire_context():
            return StoreBackendEntrypoint().open_dataset(
                store, mask_and_scale=mask_and_scale, decode_times=decode_times,
                concat_characters=concat_characters, decode_coords=decode_coords, drop_variables=drop_variables,
                use_cftime=use_cftime, decode_timedelta=decode_timedelta)
