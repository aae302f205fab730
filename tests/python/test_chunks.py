"""The chunk-shape advice (issue 15, item 3): h5fz.chunks, `h5fz params
--shape` and fz::suggest_chunk_shape follow one rule (the fastest axes whole
while they fit in the target, the next axis in the fewest equal pieces that
fit, the slower axes 1), and the advice works as given: h5py writes with
chunks=h5fz.chunks(...), h5repack with the printed -l CHUNK=."""

import os
import random
import re
import shutil
import subprocess

import numpy as np
import pytest
import h5py

import h5fz
from conftest import check_chunks_filtered

pytestmark = pytest.mark.usefixtures("plugin")


def tool_chunks(h5fz_tool, shape, element_bytes, mib=None):
    args = [h5fz_tool, "params", "--shape", ",".join(str(d) for d in shape), "--element-bytes", str(element_bytes)]
    if mib is not None:
        args += ["--chunk-mib", repr(mib)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"^chunks: +h5repack -l CHUNK=(\S+), h5py chunks=(\([^)]*\))", r.stdout, re.M)
    assert m, r.stdout
    spelled = tuple(int(v) for v in m.group(1).split("x"))
    as_tuple = tuple(int(v) for v in re.findall(r"\d+", m.group(2)))
    assert spelled == as_tuple
    return spelled


def test_worked_examples():
    assert h5fz.chunks((512, 512, 512), "f4") == (4, 512, 512)
    assert h5fz.chunks((91, 91, 91), np.float32) == (91, 91, 91)
    assert h5fz.chunks((2161, 4320), "f4") == (241, 4320)
    assert h5fz.chunks((100, 1000, 1000), "f8") == (1, 500, 1000)
    assert h5fz.chunks((1 << 30,), element_bytes=4) == (1 << 20,)
    assert h5fz.chunks((10, 20, 64, 1024)) == (1, 10, 64, 1024)
    assert h5fz.chunks((0, 100)) == (1, 100)
    assert h5fz.chunks((512, 512, 512), "i2", target_bytes=8 << 20) == (16, 512, 512)


@pytest.mark.parametrize("bad", [dict(shape=()), dict(shape=(10,), element_bytes=0),
                                 dict(shape=(10,), element_bytes=8, target_bytes=4),
                                 dict(shape=(10,), target_bytes=1 << 32), dict(shape=(-1, 4))])
def test_refuses_what_has_no_answer(bad):
    with pytest.raises(ValueError):
        h5fz.chunks(**bad)


def test_the_helper_and_the_tool_agree(h5fz_tool):
    rng = random.Random(5)
    for _ in range(60):
        rank = rng.randint(1, 4)
        shape = tuple(rng.choice([rng.randint(1, 8), rng.randint(1, 5000)]) for _ in range(rank))
        width = rng.choice([1, 2, 4, 8])
        mib = rng.choice([None, 0.25, 1, 4, 16])
        target = (4 << 20) if mib is None else int(mib * 1048576)
        assert h5fz.chunks(shape, element_bytes=width, target_bytes=target) == \
            tool_chunks(h5fz_tool, shape, width, mib), (shape, width, mib)


def test_bad_tool_arguments_exit_2_before_printing(h5fz_tool):
    for args in (["--shape", "10,10", "--chunk-mib", "0.000001"], ["--chunk-mib", "4"],
                 ["--shape", "10,10", "--element-bytes", "2.5"], ["--shape", "10,10", "--chunk-mib", "5000"]):
        r = subprocess.run([h5fz_tool, "params"] + args, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stdout == "", (args, r.stdout)


def test_h5py_writes_with_the_advice(tmp_path, data_dir):
    field = np.fromfile(os.path.join(data_dir, "999x999.float"), dtype="<f4").reshape(999, 999)
    chunk = h5fz.chunks(field.shape, field.dtype, target_bytes=1 << 20)
    assert chunk == (250, 999)  # 262 rows fit in 1 MiB: 4 equal pieces
    path = str(tmp_path / "advised.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=field, chunks=chunk, compression=h5fz.FILTER_ID,
                         compression_opts=h5fz.compression_opts("cuszhi-cr", "noa", 1e-3))
    with h5py.File(path, "r") as f:
        d = f["x"]
        assert d.chunks == chunk
        check_chunks_filtered(d)
        back = d[()]
    assert np.max(np.abs(back.astype(np.float64) - field)) <= 1e-3 * (field.max() - field.min())


def test_h5repack_takes_the_printed_layout(tmp_path, h5fz_tool, data_dir):
    h5repack = shutil.which("h5repack")
    if not h5repack:
        pytest.skip("h5repack not installed")
    field = np.fromfile(os.path.join(data_dir, "999x999.float"), dtype="<f4").reshape(999, 999)
    src, dst = str(tmp_path / "in.h5"), str(tmp_path / "out.h5")
    with h5py.File(src, "w") as f:
        f.create_dataset("x", data=field, chunks=(32, 32))  # h5py-sized small chunks
    r = subprocess.run([h5fz_tool, "params", "--preset", "fzgpu", "--mode", "noa", "--bound", "1e-3",
                        "--shape", "999,999", "--chunk-mib", "1"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    layout = re.search(r"^chunks: +h5repack -l (CHUNK=\S+),", r.stdout, re.M).group(1)
    filt = re.search(r"^h5repack: -f (\S+)$", r.stdout, re.M).group(1)
    r = subprocess.run([h5repack, "-l", "x:" + layout, "-f", "x:" + filt, src, dst], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, HDF5_PLUGIN_PATH=h5fz.plugin_dir()))
    assert r.returncode == 0, r.stdout + r.stderr
    with h5py.File(dst, "r") as f:
        assert f["x"].chunks == (250, 999)
        check_chunks_filtered(f["x"])
