"""h5fz.FZ: the filter as h5py's create_dataset keywords, in the form of
hdf5plugin's filter classes (compression and compression_opts, also named
filter_id and filter_options).
"""

from collections.abc import Mapping

from ._options import FILTER_ID, compression_opts
from ._register import _register_quietly


class FZ(Mapping):
    """H5Z-FZ for h5py's ``create_dataset``, as hdf5plugin's filter classes are::

        f.create_dataset("t", data=a, chunks=h5fz.chunks(a.shape, a.dtype),
                         **h5fz.FZ(preset="fzgpu", noa=1e-3))

    One of ``abs=``, ``noa=`` (relative to each chunk's value range),
    ``rel=`` (point-wise; pfpl only) or ``noa_global=`` with ``data=``
    (relative to the whole dataset's range, stored as ABS:
    :func:`global_abs_bound`) gives the mode and the bound; none means a
    lossless preset. ``missing``, ``dtype``, ``tuning``, ``alpha``,
    ``beta``: as :func:`compression_opts`. Unpacks to ``compression`` (the
    filter id) and ``compression_opts`` (the words); ``filter_id`` and
    ``filter_options`` hold the same, as hdf5plugin names them.
    """

    filter_id = FILTER_ID

    def __init__(self, preset="lossless", abs=None, noa=None, rel=None, missing=None, dtype=None, tuning=None,
                 alpha=None, beta=None, noa_global=None, data=None):
        given = [(m, b) for m, b in (("abs", abs), ("noa", noa), ("rel", rel), ("noa-global", noa_global))
                 if b is not None]
        if len(given) > 1:
            raise ValueError("h5fz.FZ: give one of abs=, noa=, rel=, noa_global= (got %s)"
                             % ", ".join(m for m, _ in given))
        mode, bound = given[0] if given else ("abs", None)
        self.filter_options = compression_opts(preset, mode, bound, missing, dtype, tuning, alpha, beta, data)
        self._settings = dict(preset=preset, mode=mode, bound=bound)
        _register_quietly()

    def _items(self):
        return {"compression": self.filter_id, "compression_opts": self.filter_options}

    def __getitem__(self, key):
        return self._items()[key]

    def __iter__(self):
        return iter(self._items())

    def __len__(self):
        return 2

    def __repr__(self):
        s = self._settings
        bound = "" if s["bound"] is None else ", %s=%r" % (s["mode"], s["bound"])
        return "h5fz.FZ(preset=%r%s) -> compression_opts=%r" % (s["preset"], bound, self.filter_options)
