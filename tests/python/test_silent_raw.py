"""No silent raw storage, no misleading messages (issue 12, item 4):
variable-length strings under compression=32850, and a lossy preset placed
after fletcher32."""

import os
import subprocess
import sys

import numpy as np
import pytest
import h5py

import h5fz
from conftest import HERE, REPO, filter_codes

pytestmark = pytest.mark.usefixtures("plugin")

VLEN_CHILD = r"""
import sys
sys.path[:0] = [%(tools)r, %(here)r]
import h5fz
h5fz.register()
import h5py, numpy as np
words = np.array(["word %%d " %% i * (i %% 7 + 1) for i in range(300)], dtype=object)
with h5py.File(sys.argv[1], "w") as f:
    for name, opts in (("lossless", (1,)), ("pfpl", h5fz.compression_opts("pfpl", "noa", 1e-3))):
        f.create_dataset(name, data=words, chunks=(10,), dtype=h5py.string_dtype(),
                         compression=h5fz.FILTER_ID, compression_opts=opts)
with h5py.File(sys.argv[1], "r") as f:
    for name in ("lossless", "pfpl"):
        d = f[name]
        back = [w.decode() if isinstance(w, bytes) else w for w in d[:]]
        assert back == list(words), name
        dcpl = d.id.get_create_plist()
        assert [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())] == [h5fz.FILTER_ID]
        # HDF5 skipped set_local (values still in the user layout) and stored
        # every chunk unfiltered (filter mask bit 0 set)
        assert not h5fz.is_stored_layout(h5fz.filter_values(d)[1])
        for i in range(d.id.get_num_chunks()):
            assert d.id.get_chunk_info(i).filter_mask & 1, (name, i)
print("OK")
"""


def test_vlen_strings_stay_unfiltered_quietly(tmp_path):
    code = VLEN_CHILD % {"tools": os.path.join(REPO, "tools", "python"), "here": HERE}
    env = {k: v for k, v in os.environ.items() if k != "H5Z_FZ_VERBOSE"}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "vlen.h5")], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr[-3000:]
    assert "H5Z-FZ" not in r.stderr, "messages for vlen chunks:\n" + r.stderr[-3000:]
    assert r.stderr.strip() == "", r.stderr[-3000:]


def _fletcher_first(path, opts, extra_before=()):
    """A dataset whose pipeline is [extra..., fletcher32, H5Z-FZ] (h5py's
    create_dataset puts fletcher32 last; the low-level API keeps the order)."""
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((20, 20))
        for add in extra_before:
            add(dcpl)
        dcpl.set_fletcher32()
        dcpl.set_filter(h5fz.FILTER_ID, h5py.h5z.FLAG_OPTIONAL, opts)
        space = h5py.h5s.create_simple((40, 40))
        h5py.h5d.create(f.id, b"d", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)


def test_lossy_after_fletcher32_names_fletcher32(tmp_path):
    with pytest.raises(ValueError) as exc:
        _fletcher_first(tmp_path / "f.h5", h5fz.compression_opts("pfpl", "abs", 1e-3))
    text = str(exc.value)
    assert "fletcher32" in text and "shuffle" not in text, text
    assert "after H5Z-FZ" in text, text


def test_lossy_after_shuffle_and_fletcher32_names_both(tmp_path):
    with pytest.raises(ValueError) as exc:
        _fletcher_first(tmp_path / "sf.h5", h5fz.compression_opts("pfpl", "abs", 1e-3),
                        extra_before=(lambda dcpl: dcpl.set_shuffle(),))
    text = str(exc.value)
    assert "shuffle=False" in text and "fletcher32" in text, text


def test_lossless_after_fletcher32_is_fine(tmp_path):
    _fletcher_first(tmp_path / "ok.h5", h5fz.compression_opts())
    with h5py.File(tmp_path / "ok.h5", "r+") as f:
        d = f["d"]
        d[...] = np.arange(1600, dtype="<f4").reshape(40, 40)
        assert filter_codes(d) == [3, h5fz.FILTER_ID]
        assert np.array_equal(d[...], np.arange(1600, dtype="<f4").reshape(40, 40))


def test_h5py_fletcher32_true_with_lossy_preset_works(tmp_path):
    """What h5py users write: fletcher32 goes after H5Z-FZ, so it is accepted."""
    a = np.linspace(0, 1, 1600, dtype="<f4").reshape(40, 40)
    with h5py.File(tmp_path / "h.h5", "w") as f:
        d = f.create_dataset("d", data=a, chunks=(20, 20), fletcher32=True, compression=h5fz.FILTER_ID,
                             compression_opts=h5fz.compression_opts("pfpl", "abs", 1e-3))
        assert filter_codes(d) == [h5fz.FILTER_ID, 3]
        assert np.abs(d[...] - a).max() <= 1e-3
