"""h5fz repack (issue 15, item 1): a copy of an HDF5 or netCDF-4 file whose
numeric datasets are compressed a batch of chunks at a time and written with
H5Dwrite_chunk. Checked here: the structure is the input's (h5dump -H, every
attribute, links, references, dimension scales), the frames are the ones
h5repack -f UD=32850 writes through the filter, every element of the real
fields is within the bound for every lossy preset and mode, netCDF fill
values are kept, and a run that fails or is interrupted leaves no output."""

import os
import pty
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples

pytestmark = pytest.mark.usefixtures("plugin")

LOSSY = ["pfpl", "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr"]


def repack(tool, src, dst, *args, check=True, **kw):
    r = subprocess.run([tool, "repack", str(src), str(dst)] + list(args), capture_output=True, text=True,
                       timeout=600, **kw)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def table_rows(stdout):
    """{dataset path: the table row's columns}."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("/"):
            rows[line.split()[0]] = line
    return rows


def dump(args, path):
    """h5dump's output without the file name line and object addresses."""
    r = subprocess.run(["h5dump"] + args + [str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = r.stdout.split("\n", 1)[1]
    return re.sub(r"(DATASET|GROUP|DATATYPE) \d+ ", r"\1 ", text)


def attributes(path):
    """Every object's attributes, in order, references as the paths they name."""
    out = {}
    with h5py.File(path, "r") as f:
        def value(v):
            if isinstance(v, h5py.Reference):
                return f[v].name if v else None
            if isinstance(v, np.ndarray) and v.dtype.kind in "OV":
                return [value(x) for x in (v.tolist() if v.dtype.kind == "V" else v)]
            if isinstance(v, (tuple, list)):
                return [value(x) for x in v]
            if isinstance(v, np.ndarray):
                return (str(v.dtype), v.tolist())
            return repr(v)

        def visit(name, obj):
            out[name] = [(k, value(obj.attrs[k])) for k in obj.attrs]
        visit("/", f)
        f.visititems(visit)
    return out


def write_rich_file(path, wmag, pressure):
    """Groups, attributes of several kinds, links, references, dimension
    scales, strings, compounds, integers, a gzip dataset, a contiguous one,
    ragged edges and a big-endian float."""
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["title"] = "repack test"
        f.attrs["numbers"] = np.arange(5, dtype=np.int16)
        f.attrs["vstring"] = "variable"
        model = f.create_group("model", track_order=True)
        model.attrs["units"] = b"K"
        model.create_dataset("wmag", data=wmag, chunks=(16, 40, 91))             # ragged in two axes
        model.create_dataset("pressure", data=pressure)                          # contiguous
        model.create_dataset("gz", data=wmag[:32], chunks=(8, 91, 91), compression="gzip", shuffle=True)
        model.create_dataset("be", data=pressure.astype(">f4"), chunks=(100, 384))
        f.create_dataset("ints", data=np.arange(100000, dtype=np.int32).reshape(100, 1000), chunks=(30, 1000))
        f.create_dataset("names", data=np.array([b"alpha", b"beta"]))
        f.create_dataset("vstr", data=["x", "yy", "zzz"], dtype=h5py.string_dtype())
        f.create_dataset("table", data=fz_samples.compound(50))
        f.create_dataset("scalar", data=3.5)
        layout = h5py.VirtualLayout(shape=(2, 384), dtype="f8")
        layout[0] = h5py.VirtualSource(".", "/model/pressure", shape=pressure.shape)[0]
        layout[1] = h5py.VirtualSource(".", "/model/pressure", shape=pressure.shape)[383]
        f.create_virtual_dataset("virtual", layout)
        x = f.create_dataset("x", data=np.arange(91, dtype=np.float64))
        x.make_scale("x")
        model["wmag"].dims[2].attach_scale(x)
        model["wmag"].dims[2].label = "x"
        f["link"] = h5py.SoftLink("/model/wmag")
        f["elink"] = h5py.ExternalLink("other.h5", "/data")
        f["hard"] = model["pressure"]
        f.attrs["ref"] = model.ref
        f.attrs["refs"] = np.array([model["wmag"].ref, x.ref], dtype=h5py.ref_dtype)


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    d = tmp_path_factory.mktemp("repack")
    wmag = fz_samples.load_real("wmag91.float")
    pressure = fz_samples.load_real("pressure.384_384.f64")
    src = d / "in.h5"
    write_rich_file(src, wmag, pressure)
    return d, src, wmag, pressure


def test_structure_and_values_are_the_inputs(h5fz_tool, rich):
    d, src, wmag, pressure = rich
    dst = d / "out.h5"
    r = repack(h5fz_tool, src, dst, "--preset", "fzgpu", "--mode", "noa", "--bound", "1e-3")
    # The same structure for h5dump, and every attribute value (references
    # print as the paths they point to).
    assert dump(["-H"], src) == dump(["-H"], dst)
    assert attributes(src) == attributes(dst)
    rows = table_rows(r.stdout)
    for path in ["/model/wmag", "/model/pressure", "/model/gz", "/model/be", "/ints", "/x"]:
        assert path in rows and "copied" not in rows[path], r.stdout
    for path, why in [("/names", "string"), ("/vstr", "string"), ("/table", "compound"), ("/scalar", "scalar"),
                      ("/virtual", "virtual")]:
        assert "copied (%s)" % why in rows[path], r.stdout
    assert "lossless (dimension scale)" in rows["/x"]
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        for name in ["names", "vstr", "table", "scalar", "ints", "x"]:
            assert np.array_equal(a[name][()], b[name][()]), name
        assert b["virtual"].is_virtual
        assert np.array_equal(b["virtual"][()], b["model/pressure"][[0, 383]])   # maps into the new file
        assert b["hard"].id == b["model/pressure"].id             # still one object
        assert b.get("link", getlink=True).path == "/model/wmag"
        assert b.get("elink", getlink=True).filename == "other.h5"
        assert b[b.attrs["ref"]].name == "/model"
        assert [b[r].name for r in b.attrs["refs"]] == ["/model/wmag", "/x"]
        assert b["model/wmag"].dims[2][0].name == "/x"
        assert b["model/wmag"].dims[2].label == "x"
        assert list(b.keys()) == list(a.keys())                     # creation order kept
        for name in ["model/wmag", "model/pressure", "model/gz", "model/be", "ints", "x"]:
            assert list(b[name]._filters) == [str(h5fz.FILTER_ID)], name
        assert b["model/pressure"].chunks == h5fz.chunks(pressure.shape, pressure.dtype)  # unchunked: auto
        assert b["model/wmag"].chunks == (16, 40, 91)                                      # kept
        # Per chunk NOA bound, fill kept: the filter reads what was written.
        out = b["model/wmag"][()]
        for z in range(0, 91, 16):
            for y in range(0, 91, 40):
                o, w = wmag[z:z + 16, y:y + 40], out[z:z + 16, y:y + 40]
                assert np.abs(o.astype(np.float64) - w).max() <= 1e-3 * (o.max() - o.min())
        assert b["model/be"].dtype == np.dtype(">f4")


def test_frames_are_h5repacks(h5fz_tool, rich):
    """The same stored parameters and, chunk for chunk, the same frames as
    h5repack -f UD=... through the filter, ragged edges included."""
    if not shutil.which("h5repack"):
        pytest.skip("h5repack not installed")
    d, src, _, _ = rich
    for preset in ["fzgpu", "cuszhi-cr"]:
        ours, theirs = d / ("ours-%s.h5" % preset), d / ("theirs-%s.h5" % preset)
        repack(h5fz_tool, src, ours, "--preset", preset, "--mode", "noa", "--bound", "1e-3",
               "--datasets", "/model/wmag,/model/be")
        ud = h5fz.h5repack_filter(preset, "noa", 1e-3)
        r = subprocess.run(["h5repack", "-f", "/model/wmag:" + ud, "-f", "/model/be:" + ud, str(src), str(theirs)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        with h5py.File(ours, "r") as a, h5py.File(theirs, "r") as b:
            for name in ["model/wmag", "model/be"]:
                da, db = a[name], b[name]
                assert da._filters == db._filters
                n = da.id.get_num_chunks()
                assert n == db.id.get_num_chunks() > 1
                for i in range(n):
                    offset = da.id.get_chunk_info(i).chunk_offset
                    assert da.id.read_direct_chunk(offset) == db.id.read_direct_chunk(offset), (name, offset)
            assert sorted(a["model/gz"]._filters) == ["gzip", "shuffle"]   # not selected: unchanged


@pytest.mark.parametrize("preset", LOSSY)
def test_bound_on_real_fields_every_preset_and_mode(h5fz_tool, tmp_path, preset):
    fields = {}
    for fname, _, shape in fz_samples.REAL_FIELDS:
        fields[fname.split(".")[0]] = fz_samples.load_real(fname)
    src = tmp_path / "fields.h5"
    with h5py.File(src, "w") as f:
        for name, a in fields.items():
            f.create_dataset(name, data=a, chunks=h5fz.chunks(a.shape, a.dtype, target_bytes=256 << 10))
    modes = ["abs", "noa", "noa-global"] + (["rel"] if preset == "pfpl" else [])
    for mode in modes:
        for bound in ([1e-2, 1e-4] if mode != "abs" else [0.05, 1e-3]):
            dst = tmp_path / ("out-%s-%g.h5" % (mode, bound))
            r = repack(h5fz_tool, src, dst, "--preset", preset, "--mode", mode, "--bound", repr(bound), "--verify",
                       "--errors")
            rows = table_rows(r.stdout)
            with h5py.File(dst, "r") as g:
                for name, a in fields.items():
                    assert rows["/" + name].rstrip().endswith("ok"), r.stdout
                    b = g[name][()]
                    err = np.abs(a.astype(np.float64) - b.astype(np.float64))
                    assert float(rows["/" + name].split()[-2]) == pytest.approx(err.max(), rel=1e-3, abs=1e-30)
                    if mode == "abs":
                        assert err.max() <= bound
                    elif mode == "noa-global":
                        assert err.max() <= bound * (float(a.max()) - float(a.min()))
                        stored = h5fz.parse_stored(g[name]._filters[str(h5fz.FILTER_ID)])
                        assert stored["mode_name"] == "abs"
                    elif mode == "rel":
                        assert np.all(err <= bound * np.abs(a.astype(np.float64)))
                    else:
                        chunks = g[name].chunks
                        for start in np.ndindex(*[-(-s // c) for s, c in zip(a.shape, chunks)]):
                            sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(start, chunks))
                            o = a[sl].astype(np.float64)
                            assert err[sl].max() <= bound * (o.max() - o.min()), (name, sl)


def test_netcdf_fill_value_and_structure(h5fz_tool, tmp_path):
    if not shutil.which("ncgen") or not shutil.which("ncdump"):
        pytest.skip("netcdf-bin not installed")
    cdl = tmp_path / "t.cdl"
    cdl.write_text("""netcdf t {
dimensions:
  time = UNLIMITED ;
  lat = 60 ;
  lon = 90 ;
variables:
  double time(time) ; time:units = "days" ;
  float lat(lat) ;
  float lon(lon) ;
  float sst(time, lat, lon) ; sst:_FillValue = -1.e34f ; sst:long_name = "sea surface temperature" ;
  int count(lat, lon) ;
  string label ;
  :title = "repack test" ;
}
""")
    src, dst = tmp_path / "t.nc", tmp_path / "tz.nc"
    subprocess.run(["ncgen", "-k", "nc4", "-o", str(src), str(cdl)], check=True, timeout=60)
    y, x = np.meshgrid(np.linspace(0, 3, 60), np.linspace(0, 6, 90), indexing="ij")
    sst = (20 + 5 * np.sin(y) * np.cos(x) + np.arange(12)[:, None, None] * 0.1).astype(np.float32)
    sst[:, :10, :20] = np.float32(-1e34)                                   # land
    with h5py.File(src, "a") as f:
        f["time"].resize((12,))
        f["time"][:] = np.arange(12)
        f["lat"][:] = np.linspace(-89, 89, 60)
        f["lon"][:] = np.linspace(0, 358, 90)
        f["sst"].resize(sst.shape)
        f["sst"][:] = sst
        f["count"][:] = np.arange(5400).reshape(60, 90)
    r = repack(h5fz_tool, src, dst, "--preset", "cuszhi-cr", "--mode", "noa", "--bound", "1e-3", "--verify")
    assert "(missing value)" in table_rows(r.stdout)["/sst"]

    def header(p):
        return subprocess.run(["ncdump", "-h", str(p)], capture_output=True, text=True, check=True).stdout.split("\n", 1)[1]
    assert header(src) == header(dst)
    with h5py.File(dst, "r") as g:
        out = g["sst"][()]
        stored = h5fz.parse_stored(g["sst"]._filters[str(h5fz.FILTER_ID)])
        assert stored["fill_defined"] and stored["fill_bytes"] == np.float32(-1e34).tobytes()
        assert np.array_equal(g["lat"][()], np.linspace(-89, 89, 60).astype(np.float32))   # coordinates exact
    land = sst == np.float32(-1e34)
    assert np.array_equal(out[land], sst[land])                                # the fill kept exactly
    sea = sst[0][~land[0]]
    assert np.abs(out[0][~land[0]] - sea).max() <= 1e-3 * (sea.max() - sea.min())  # range without the land


def test_chunks_auto_and_shape(h5fz_tool, tmp_path):
    a = fz_samples.load_real("vorticity.128_128_41")
    src = tmp_path / "v.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("v", data=a, chunks=(5, 16, 16))
        f.create_dataset("flat", data=a[0])
    auto, shaped = tmp_path / "auto.h5", tmp_path / "shaped.h5"
    repack(h5fz_tool, src, auto, "--preset", "fzgpu", "--mode", "abs", "--bound", "0.01", "--chunks", "auto")
    repack(h5fz_tool, src, shaped, "--preset", "fzgpu", "--mode", "abs", "--bound", "0.01", "--chunks", "8,200,64")
    with h5py.File(auto, "r") as f:
        assert f["v"].chunks == h5fz.chunks(a.shape, a.dtype)
        assert f["flat"].chunks == h5fz.chunks(a[0].shape, a.dtype)
    with h5py.File(shaped, "r") as f:
        assert f["v"].chunks == (8, 128, 64)            # clamped to the fixed extent
        assert f["flat"].chunks == h5fz.chunks(a[0].shape, a.dtype)  # other rank: keep (unchunked: auto)
        assert np.abs(f["v"][()] - a).max() <= 0.01


def test_bad_usage_and_failures_leave_nothing(h5fz_tool, tmp_path):
    src = tmp_path / "in.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("a", data=np.ones((100, 100), np.float32))
    out = tmp_path / "out.h5"
    for args in (["--preset", "fzgpu"], ["--preset", "fzgpu", "--mode", "rel", "--bound", "1e-3"],
                 ["--preset", "nope"], ["--chunks", "0,4"], ["--errors", "--no-errors"]):
        r = repack(h5fz_tool, src, out, *args, check=False)
        assert r.returncode == 2, (args, r.stderr)
        assert "h5fz: " in r.stderr
    r = repack(h5fz_tool, src, src, check=False)
    assert r.returncode == 2 and "OUT is IN" in r.stderr
    r = repack(h5fz_tool, tmp_path / "missing.h5", out, check=False)
    assert r.returncode == 1 and "cannot open" in r.stderr
    # A dataset no installed filter can read: the run fails naming it, an
    # existing OUT stays as it was and no partial file is left.
    bad = tmp_path / "bad.h5"
    with h5py.File(bad, "w") as f:
        f.create_dataset("good", data=np.ones((10, 10), np.float32))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((10,))
        dcpl.set_filter(32099, h5py.h5z.FLAG_OPTIONAL, (1,))             # no such filter anywhere
        sid = h5py.h5s.create_simple((100,))
        try:
            h5py.h5d.create(f.id, b"odd", h5py.h5t.NATIVE_FLOAT, sid, dcpl=dcpl)
        except Exception:
            pytest.skip("this HDF5 refuses to create a dataset with an unknown optional filter")
    with h5py.File(bad, "a") as f:
        if f["odd"].id.get_storage_size() == 0:
            # Optional filters that are missing are skipped on writing: write
            # a raw chunk that claims the filter ran, so reading needs it.
            f["odd"].id.write_direct_chunk((0,), b"\0" * 40, filter_mask=0)
    out.write_bytes(b"previous")
    r = repack(h5fz_tool, bad, out, "--preset", "lossless", check=False)
    assert r.returncode == 1 and "/odd" in r.stderr, r.stderr
    assert out.read_bytes() == b"previous"
    assert not list(tmp_path.glob("*.h5fz-partial"))


def big_input(path, mib):
    w = fz_samples.load_real("wmag91.float")
    reps = max(1, int(mib * 2 ** 20 / w.nbytes))
    with h5py.File(path, "w") as f:
        d = f.create_dataset("w", shape=(91 * reps, 91, 91), dtype="f4", chunks=(4, 91, 91))
        for i in range(reps):
            d[i * 91:(i + 1) * 91] = w


def test_interrupted_run_leaves_no_output(h5fz_tool, tmp_path):
    src, out = tmp_path / "big.h5", tmp_path / "out.h5"
    big_input(src, 24)
    p = subprocess.Popen([h5fz_tool, "repack", str(src), str(out), "--preset", "cuszhi-cr", "--mode", "noa",
                          "--bound", "1e-4", "--batch-mib", "1", "--progress", "--verify"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Wait for the first chunks to be written, then stop the process, send
    # the interrupt and let it go on: it must stop between chunks.
    os.set_blocking(p.stderr.fileno(), True)
    first = p.stderr.read(1)
    p.send_signal(signal.SIGSTOP)
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGCONT)
    _, err = p.communicate(timeout=300)
    assert first, "no progress line"
    assert p.returncode == 130, err
    assert b"interrupted" in err
    assert not out.exists()
    assert not list(tmp_path.glob("*.h5fz-partial"))


def test_progress_on_a_terminal_only(h5fz_tool, tmp_path):
    src, out = tmp_path / "big.h5", tmp_path / "out.h5"
    big_input(src, 6)
    r = repack(h5fz_tool, src, out, "--preset", "fzgpu", "--mode", "abs", "--bound", "0.01")
    assert r.stderr == ""                                          # not a terminal: quiet
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(h5fz_tool, [h5fz_tool, "repack", str(src), str(out), "--preset", "fzgpu", "--mode", "abs",
                             "--bound", "0.01", "--batch-mib", "1"])
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0, seen
    text = seen.decode(errors="replace")
    assert re.search(r"\d+%\s+[\d.]+ \w?B / [\d.]+ \w?B\s+\d+ MB/s\s+[\d:?]+ left", text), text
    assert "1 of 1 datasets compressed" in text
