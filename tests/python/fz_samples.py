"""Deterministic sample data shared by the tests and by write_sample.py.

Everything here is built with integer arithmetic only (and exact int -> float
conversions), so every NumPy version (Debian's 1.24, pip's 2.x) produces the
same bytes: a file written under one interpreter can be checked bit for bit
under another.
"""

import os

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def data_dir():
    """Folder of the real fields: $FZ_DATA, else <repo>/../shared/data."""
    return os.environ.get("FZ_DATA") or os.path.join(os.path.dirname(REPO), "shared", "data")


# file name, dtype, shape (slowest first); see shared/data/README.md
REAL_FIELDS = [
    ("vorticity.128_128_41", "<f4", (41, 128, 128)),
    ("vorticity.512_512", "<f4", (512, 512)),
    ("wmag91.float", "<f4", (91, 91, 91)),
    ("999x999.float", "<f4", (999, 999)),
    ("const32x32x59.float", "<f4", (59, 32, 32)),
    ("pressure.384_384.f64", "<f8", (384, 384)),
]


def load_real(name):
    for fname, dt, shape in REAL_FIELDS:
        if fname == name:
            path = os.path.join(data_dir(), fname)
            if not os.path.isfile(path):
                raise FileNotFoundError(
                    "real field %s missing (set FZ_DATA or put shared/data beside the repo)" % path)
            return np.fromfile(path, dtype=dt).reshape(shape)
    raise KeyError(name)


def mix64(n, seed=1):
    """n pseudo-random uint64 (splitmix64 of the index), identical everywhere."""
    x = np.arange(n, dtype=np.uint64) + np.uint64(seed * 0x9E3779B9 + 1)
    with np.errstate(over="ignore"):
        x = x * np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return x


def smooth(shape, dtype, seed=0):
    """A smooth, compressible array of any integer or float dtype.

    Integers: a sum of ramps (wrapping modulo the type for narrow ones).
    Floats: small integers times a quarter (exact in float16..64).
    """
    dt = np.dtype(dtype)
    idx = np.indices(shape, dtype=np.int64)
    v = np.full(shape, seed * 7, dtype=np.int64)
    for k in range(len(shape)):
        v = v + (k + 1 + seed) * idx[k]
    if dt.kind == "f":
        w = (v % 1999) - 999  # |w| < 1000 keeps float16 exact
        return (w.astype(np.float64) * 0.25).astype(dt)
    if dt.kind in "iu":
        size = dt.itemsize
        u = v.astype(np.uint64)
        if size < 8:
            u = u & np.uint64((1 << (8 * size)) - 1)
        native = u.astype("u%d" % size).view("%s%d" % (dt.kind, size))
        return native.astype(dt)
    raise TypeError("smooth(): %s" % dt)


def noisy(shape, dtype, seed=1):
    """Random bytes of the given dtype (floats may hold NaN and Inf patterns)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    nbytes = n * dt.itemsize
    raw = mix64((nbytes + 7) // 8, seed).view(np.uint8)[:nbytes].copy()
    return raw.view(dt).reshape(shape)


COMPOUND = np.dtype([("id", "<i4"), ("t", "<f8"), ("tag", "S5"), ("v", "<f4", (3,))])


def compound(n, seed=0):
    a = np.zeros(n, dtype=COMPOUND)
    a["id"] = np.arange(n, dtype=np.int64) * 3 + seed
    a["t"] = (np.arange(n) % 1000).astype(np.float64) * 0.5
    a["tag"] = [("r%04d" % (i % 10000))[:5].encode() for i in range(n)]
    a["v"] = (np.arange(3 * n).reshape(n, 3) % 97).astype(np.float32) * 0.125
    return a


def cross_version_arrays():
    """What write_sample.py writes and every reader checks: name -> (array, chunks)."""
    out = {}
    out["i16"] = (smooth((50, 37), "<i2", 1), (16, 16))
    out["u64"] = (smooth((300,), "<u8", 2), (64,))
    out["f32_be"] = (smooth((20, 21, 22), ">f4", 3), (8, 8, 8))
    out["f64"] = (noisy((33, 17), "<f8", 4), (10, 10))
    out["f16"] = (smooth((4, 5, 6, 7), "<f2", 5), (2, 3, 4, 5))
    out["cmpd"] = (compound(123, 6), (40,))
    return out


def cross_version_real():
    """The real field slice written by every version (name, array, chunks)."""
    w = load_real("wmag91.float")[:40]
    return "wmag91_part", w, (20, 45, 45)
