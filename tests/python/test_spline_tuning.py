"""The spline tuning of presets 5 and 6 (cuszhi-tp, cuszhi-cr), cd_values[6..10],
and the "no missing value" placeholder (cd[4] = cd[5] = 4294967295), through
h5py, h5repack (Debian's, HDF5 1.10), `h5fz params` / `compress` / `inspect`
and the Python helper (docs/CD_VALUES.md, "The spline tuning").

Every file is closed and reopened before it is read, and every element is
checked against the bound (test_lossy.bound_violations). The tunings are
checked to reach the engine: off and quality-first give other chunk bytes
than ratio-first, manual with alpha = beta = 1 gives ratio-first's bytes,
datasets with different tunings written by one process included (the
engine caches pipelines per set of options)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import h5py

import fz_samples
import h5fz
from conftest import HERE, REPO, check_chunks_filtered, filter_codes, fz_filter_values
from test_lossy import assert_within

pytestmark = pytest.mark.usefixtures("plugin")

SPLINE_PRESETS = ["cuszhi-tp", "cuszhi-cr"]
# tuning, compression_opts keywords
TUNINGS = [
    ("off", {"tuning": "off"}),
    ("ratio-first", {"tuning": "ratio-first"}),
    ("quality-first", {"tuning": "quality-first"}),
    ("manual", {"tuning": "manual", "alpha": 1.5, "beta": 4}),
]
NONE = (4294967295, 4294967295)   # the "no missing value" placeholder
CHUNKS = (32, 40, 91)             # several chunks of wmag91, ragged at two edges


def _b(x):
    return h5fz.split_bound(x)


def _ab(alpha, beta):
    return _b(alpha) + _b(beta)


@pytest.fixture(scope="module")
def wmag():
    return fz_samples.load_real("wmag91.float")


@pytest.fixture(scope="module")
def h5fz_tool():
    """The h5fz program built beside the plugin (FZ_H5FZ overrides)."""
    path = os.environ.get("FZ_H5FZ") or os.path.join(os.path.dirname(h5fz.plugin_dir()), "tools", "h5fz")
    assert os.access(path, os.X_OK), "h5fz not built: %s (set FZ_H5FZ)" % path
    return path


def _write(path, datasets, chunks=CHUNKS):
    """datasets: name -> (array, compression_opts). Closed on return."""
    with h5py.File(path, "w") as f:
        for name, (arr, opts) in datasets.items():
            f.create_dataset(name, data=arr, chunks=chunks, compression=h5fz.FILTER_ID, compression_opts=opts)


def _chunks_bytes(dset):
    """Every stored chunk as bytes, in storage order of the chunk offsets."""
    out = {}
    for i in range(dset.id.get_num_chunks()):
        info = dset.id.get_chunk_info(i)
        out[info.chunk_offset] = bytes(dset.id.read_direct_chunk(info.chunk_offset)[1])
    return out


def _psnr(orig, dec):
    o = orig.astype(np.float64)
    rmse = np.sqrt(np.mean((o - dec.astype(np.float64)) ** 2))
    return 20 * np.log10((o.max() - o.min()) / rmse)


# ---- h5py: every tuning, both presets, the bound element by element ------------------

@pytest.mark.parametrize("mode", ["noa", "abs"])
@pytest.mark.parametrize("tuning,kw", TUNINGS, ids=[t for t, _ in TUNINGS])
@pytest.mark.parametrize("preset", SPLINE_PRESETS)
def test_tuning_round_trip_holds_the_bound(tmp_path, wmag, preset, tuning, kw, mode):
    bound = 1e-3 if mode == "noa" else 1e-3 * float(wmag.max() - wmag.min())
    opts = h5fz.compression_opts(preset, mode, bound, **kw)
    expected_len = 11 if tuning == "manual" else 7
    assert len(opts) == expected_len and opts[4:6] == NONE and opts[6] == h5fz.SPLINE_TUNINGS[tuning], opts
    path = tmp_path / "t.h5"
    _write(path, {"t": (wmag, opts)})
    with h5py.File(path, "r") as f:
        d = f["t"]
        check_chunks_filtered(d)
        stored = h5fz.parse_stored(fz_filter_values(d)[1])
        # The words are kept as given, after the chunk dims.
        assert stored["chunk_dims"] == CHUNKS and stored["tuning"] == opts[4:], stored
        assert stored["spline_tuning_name"] == tuning and stored["spline_tuning_given"], stored
        assert stored["missing"] is None and stored["fill_defined"] == 0, stored
        if tuning == "manual":
            assert (stored["alpha"], stored["beta"]) == (1.5, 4.0), stored
        back = d[()]
    assert_within(wmag, back, mode, bound, CHUNKS, what="%s %s" % (preset, tuning))


@pytest.mark.parametrize("preset", SPLINE_PRESETS)
def test_tuning_with_a_missing_value(tmp_path, wmag, preset):
    """cd[4], cd[5] a real missing value and cd[6] a tuning: the land is kept
    bit-exact and left out of NOA's range, the rest within the bound."""
    data = wmag.copy()
    land = np.float32(-1e34)
    data[:, :20, :30] = land
    opts = h5fz.compression_opts(preset, "noa", 1e-3, missing=float(land), dtype="float32",
                                 tuning="manual", alpha=2, beta=8)
    assert h5fz.join_bound(*opts[4:6]) == float(land) and opts[6] == 3, opts
    _write(tmp_path / "m.h5", {"t": (data, opts)})
    with h5py.File(tmp_path / "m.h5", "r") as f:
        d = f["t"]
        check_chunks_filtered(d)
        stored = h5fz.parse_stored(fz_filter_values(d)[1])
        # The missing value in its own words; no HDF5 fill value was set, and
        # the missing value no longer takes its place (issue 28 item 1).
        assert stored["fill_defined"] == 0 and stored["missing"] == float(land), stored
        assert (stored["spline_tuning_name"], stored["alpha"], stored["beta"]) == ("manual", 2.0, 8.0), stored
        back = d[()]
    assert np.array_equal(back[data == land], data[data == land])
    assert_within(data, back, "noa", 1e-3, CHUNKS, fill=land, what=preset)


@pytest.mark.parametrize("preset", ["pfpl", "fzgpu", "cusz"] + SPLINE_PRESETS)
def test_placeholder_alone_is_no_missing_value(tmp_path, wmag, preset):
    """{preset, mode, bound, 4294967295, 4294967295}: accepted by every lossy
    preset, no fill value stored, the same chunks as without the words."""
    plain = h5fz.compression_opts(preset, "noa", 1e-3)
    _write(tmp_path / "p.h5", {"with": (wmag, plain + NONE), "without": (wmag, plain)})
    with h5py.File(tmp_path / "p.h5", "r") as f:
        d = f["with"]
        check_chunks_filtered(d)
        stored = h5fz.parse_stored(fz_filter_values(d)[1])
        assert stored["tuning"] == NONE and stored["fill_defined"] == 0 and stored["missing"] is None, stored
        assert _chunks_bytes(d) == _chunks_bytes(f["without"])
        back = d[()]
    assert_within(wmag, back, "noa", 1e-3, CHUNKS, what=preset)


# ---- the tunings reach the engine ---------------------------------------------------

@pytest.mark.parametrize("preset", SPLINE_PRESETS)
def test_manual_one_one_is_ratio_first_and_off_differs(tmp_path, wmag, preset):
    """One file, one process: manual alpha = beta = 1 and an explicit
    ratio-first write ratio-first's (the default's) chunks byte for byte;
    off, quality-first and manual 2, 8 write others."""
    datasets = {
        "default": h5fz.compression_opts(preset, "noa", 1e-3),
        "off": h5fz.compression_opts(preset, "noa", 1e-3, tuning="off"),
        "ratio-first": h5fz.compression_opts(preset, "noa", 1e-3, tuning="ratio-first"),
        "manual-1-1": h5fz.compression_opts(preset, "noa", 1e-3, tuning="manual", alpha=1, beta=1),
        "quality-first": h5fz.compression_opts(preset, "noa", 1e-3, tuning="quality-first"),
        "manual-2-8": h5fz.compression_opts(preset, "noa", 1e-3, tuning="manual", alpha=2, beta=8),
    }
    _write(tmp_path / "b.h5", {name: (wmag, opts) for name, opts in datasets.items()})
    with h5py.File(tmp_path / "b.h5", "r") as f:
        chunks = {name: _chunks_bytes(f[name]) for name in datasets}
    assert len(chunks["default"]) == 3 * 3 * 1
    assert chunks["ratio-first"] == chunks["default"]
    # Byte for byte, but for cuszhi-cr chunks whose sample chose its Lorenzo
    # pipeline (ratio-first only: docs/FORMAT.md, preset 6), at most 4% larger.
    for k, frame in chunks["default"].items():
        if preset != "cuszhi-cr" or frame == chunks["manual-1-1"][k]:
            assert frame == chunks["manual-1-1"][k], k
        else:
            assert len(frame) <= 1.04 * len(chunks["manual-1-1"][k]), k
    for other in ("off", "quality-first", "manual-2-8"):
        differ = [k for k in chunks["default"] if chunks[other][k] != chunks["default"][k]]
        assert differ, "%s wrote ratio-first's chunks: the tuning words did not reach the engine" % other
    assert chunks["manual-2-8"] != chunks["quality-first"]


@pytest.mark.parametrize("bound", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("preset", SPLINE_PRESETS)
def test_quality_first_gives_a_higher_psnr(tmp_path, wmag, preset, bound):
    """At the same NOA bound, quality-first's PSNR beats ratio-first's on
    wmag91 (measured: +0.22 to +0.72 dB with these chunks, ratio 1-3% lower)."""
    ratio_first = h5fz.compression_opts(preset, "noa", bound)
    quality_first = h5fz.compression_opts(preset, "noa", bound, tuning="quality-first")
    _write(tmp_path / "q.h5", {"r": (wmag, ratio_first), "q": (wmag, quality_first)})
    with h5py.File(tmp_path / "q.h5", "r") as f:
        r, q = f["r"][()], f["q"][()]
        sizes = f["r"].id.get_storage_size(), f["q"].id.get_storage_size()
    assert_within(wmag, q, "noa", bound, CHUNKS)
    psnr_r, psnr_q = _psnr(wmag, r), _psnr(wmag, q)
    assert psnr_q > psnr_r + 0.1, "quality-first %.3f dB, ratio-first %.3f dB (stored %d, %d bytes)" % (
        psnr_q, psnr_r, sizes[1], sizes[0])


# ---- refused words ---------------------------------------------------------------------

B = _b(1e-3)
BAD = [
    ("unknown-tuning", (6, 1) + B + NONE + (9,),
     "unknown spline tuning 9 in cd_values[6] (known: 0 off, 1 ratio-first, 2 quality-first, 3 manual)"),
    ("manual-without-alpha-beta", (5, 1) + B + NONE + (3,),
     "spline tuning 3 (manual) in cd_values[6] needs alpha and beta"),
    ("alpha-beta-without-manual", (6, 1) + B + NONE + (2,) + _ab(2, 2),
     "cd_values[7..10] (alpha and beta) go with spline tuning 3 (manual) only, but cd_values[6] holds 2"),
    ("alpha-below-1", (6, 1) + B + NONE + (3,) + _ab(0.5, 4),
     "alpha in cd_values[7..8] must be a finite number in [1, 1024], but it is 0.5"),
    ("beta-above-1024", (5, 0) + B + NONE + (3,) + _ab(2, 2048),
     "beta in cd_values[9..10] must be a finite number in [1, 1024], but it is 2048"),
    ("alpha-nan", (5, 1) + B + NONE + (3,) + _ab(float("nan"), 2), "alpha in cd_values[7..8]"),
    ("beta-inf", (6, 1) + B + NONE + (3,) + _ab(2, float("inf")), "beta in cd_values[9..10]"),
    ("one-tuning-word", (6, 1) + B + (4294967295,), "takes 0, 2, 3 or 7 tuning values"),
    ("four-tuning-words", (6, 1) + B + NONE + (1, 0), "but cd_values[4..] hold 4"),
    ("eight-tuning-words", (5, 1) + B + NONE + (3,) + _ab(2, 2) + (0,), "takes at most 7 tuning values"),
    ("tuning-on-pfpl", (2, 1) + B + NONE + (2,),
     "preset 2 (pfpl) takes at most 2 tuning values, but cd_values[4..] hold 3"),
    ("manual-on-cusz", (4, 1) + B + NONE + (3,) + _ab(2, 2), "takes at most 2 tuning values"),
    ("placeholder-on-lossless", (1, 0, 0, 0) + NONE, "preset 1 (lossless) takes no tuning values"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_words_refused_when_the_dataset_is_created(tmp_path, case):
    _id, opts, message = case
    with h5py.File(tmp_path / "bad.h5", "w") as f:
        with pytest.raises(ValueError) as exc:
            f.create_dataset("d", shape=(40, 40), dtype="<f4", chunks=(20, 20),
                             compression=h5fz.FILTER_ID, compression_opts=opts)
        assert "d" not in f
    text = str(exc.value)
    assert "H5Z-FZ" in text and message in text, text


# ---- h5repack (HDF5 1.10) with UD= carrying 11 values --------------------------------

def _repack(hdf5_tools, args):
    return subprocess.run([hdf5_tools["h5repack"]] + args, capture_output=True, text=True, timeout=300)


def test_h5repack_manual_11_values(tmp_path, hdf5_tools, wmag):
    src = tmp_path / "src.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=wmag)   # contiguous, unfiltered
    specs = {
        "manual": h5fz.h5repack_filter("cuszhi-cr", "noa", 1e-3, tuning="manual", alpha=1.5, beta=4),
        "quality-first": h5fz.h5repack_filter("cuszhi-tp", "noa", 1e-3, tuning="quality-first"),
    }
    # The example of docs/CD_VALUES.md, word for word.
    assert specs["manual"] == ("UD=32850,0,11,6,1,3539053052,1062232653,4294967295,4294967295,3,0,1073217536,"
                               "0,1074790400")
    chunk_arg = "t:CHUNK=%s" % "x".join(map(str, CHUNKS))
    for name, spec in specs.items():
        dst = tmp_path / ("%s.h5" % name)
        r = _repack(hdf5_tools, ["-f", spec, "-l", chunk_arg, str(src), str(dst)])
        assert r.returncode == 0, r.stdout + r.stderr
        dump = subprocess.run([hdf5_tools["h5dump"], "-pH", str(dst)], capture_output=True, text=True, timeout=60)
        assert dump.returncode == 0 and "32850" in dump.stdout, dump.stdout + dump.stderr
        # h5dump 1.10 shows all 20 (manual) / 16 stored words; 4294967295 reads -1 there.
        params = re.search(r"PARAMS \{ ([-\d ]+) \}", dump.stdout).group(1).split()
        tail = spec.split(",")[7:]
        assert [int(v) & 0xFFFFFFFF for v in params[-len(tail):]] == [int(v) for v in tail], (params, tail)
        with h5py.File(dst, "r") as f:
            d = f["t"]
            assert filter_codes(d) == [h5fz.FILTER_ID] and d.chunks == CHUNKS
            check_chunks_filtered(d)
            stored = h5fz.parse_stored(fz_filter_values(d)[1])
            assert stored["spline_tuning_name"] == name, stored
            repacked = _chunks_bytes(d)
            back = d[()]
        assert_within(wmag, back, "noa", 1e-3, CHUNKS, what="h5repack " + name)
        # The same words through h5py write the same chunks (HDF5 1.10 there,
        # this interpreter's HDF5 here); ratio-first writes others.
        opts = tuple(int(v) for v in spec.split(",")[3:])
        preset = h5fz.PRESET_NAMES[opts[0]]
        _write(tmp_path / ("h5py_%s.h5" % name), {"t": (wmag, opts), "r": (wmag, h5fz.compression_opts(preset, "noa", 1e-3))})
        with h5py.File(tmp_path / ("h5py_%s.h5" % name), "r") as f:
            assert _chunks_bytes(f["t"]) == repacked
            assert _chunks_bytes(f["r"]) != repacked


def test_h5repack_refused_words_say_why(tmp_path, hdf5_tools, wmag):
    """Manual without alpha and beta: set_local refuses it, h5repack 1.10
    copies the dataset unfiltered and still exits 0; the error stack names
    the problem."""
    src, dst = tmp_path / "src.h5", tmp_path / "dst.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=wmag)
    spec = "UD=32850,0,7,6,1,%d,%d,4294967295,4294967295,3" % B
    r = _repack(hdf5_tools, ["--enable-error-stack", "-f", spec, str(src), str(dst)])
    out = r.stdout + r.stderr
    assert "needs alpha and beta" in out, out
    if r.returncode == 0:
        with h5py.File(dst, "r") as f:
            if "t" in f:
                assert f["t"].id.get_create_plist().get_nfilters() == 0


# ---- h5fz params / compress / inspect --------------------------------------------------

def _params(h5fz_tool, args):
    return subprocess.run([h5fz_tool, "params"] + args, capture_output=True, text=True, timeout=60)


PARAMS_CASES = [
    (["--tuning", "off"], {"tuning": "off"}, "tuning off"),
    (["--tuning", "ratio-first"], {"tuning": "ratio-first"}, "tuning ratio-first"),
    (["--tuning", "quality-first"], {"tuning": "quality-first"}, "tuning quality-first"),
    (["--tuning", "manual", "--alpha", "1.5", "--beta", "4"], {"tuning": "manual", "alpha": 1.5, "beta": 4},
     "tuning manual alpha 1.5 beta 4"),
    (["--tuning", "2", "--missing", "-1e34", "--dtype", "float32"],
     {"tuning": 2, "missing": -1e34, "dtype": "float32"}, "tuning quality-first"),
    ([], {}, "tuning ratio-first (default)"),
]


@pytest.mark.parametrize("preset", SPLINE_PRESETS)
@pytest.mark.parametrize("args,kw,meaning", PARAMS_CASES, ids=[" ".join(c[0]) or "none" for c in PARAMS_CASES])
def test_h5fz_params_tuning(h5fz_tool, preset, args, kw, meaning):
    r = _params(h5fz_tool, ["--preset", preset, "--mode", "noa", "--bound", "1e-3"] + args)
    assert r.returncode == 0, r.stderr
    opts = h5fz.compression_opts(preset, "noa", 1e-3, **kw)
    tuple_text = re.search(r"^h5py: .*compression_opts=(\(.*\))$", r.stdout, re.M).group(1)
    assert tuple(int(v) for v in re.findall(r"\d+", tuple_text)) == opts, r.stdout
    repack = re.search(r"^h5repack: -f (\S+)$", r.stdout, re.M).group(1)
    assert repack == h5fz.h5repack_filter(preset, "noa", 1e-3, **kw), r.stdout
    assert re.search(r"^meaning: .*, %s$" % re.escape(meaning), r.stdout, re.M), r.stdout
    if len(opts) == 11:
        assert re.search(r"^alpha: +1\.5 = .*cd\[7\] = .*cd\[8\] = ", r.stdout, re.M), r.stdout
        assert re.search(r"^beta: +4 = .*cd\[9\] = .*cd\[10\] = ", r.stdout, re.M), r.stdout


@pytest.mark.parametrize("args,message", [
    (["--preset", "pfpl", "--tuning", "off"], "apply to presets cuszhi-tp and cuszhi-cr"),
    (["--preset", "lossless", "--tuning", "off"], "apply to presets cuszhi-tp and cuszhi-cr"),
    (["--preset", "cuszhi-cr", "--alpha", "2", "--beta", "2"], "--alpha/--beta go with --tuning manual"),
    (["--preset", "cuszhi-cr", "--tuning", "quality-first", "--alpha", "2"], "not --tuning quality-first"),
    (["--preset", "cuszhi-cr", "--tuning", "manual"], "--tuning manual needs both --alpha and --beta"),
    (["--preset", "cuszhi-cr", "--tuning", "manual", "--alpha", "2"], "needs both --alpha and --beta"),
    (["--preset", "cuszhi-tp", "--tuning", "manual", "--alpha", "0.5", "--beta", "2"], "--alpha 0.5 is outside [1, 1024]"),
    (["--preset", "cuszhi-tp", "--tuning", "manual", "--alpha", "2", "--beta", "1025"], "--beta 1025 is outside [1, 1024]"),
    (["--preset", "cuszhi-tp", "--tuning", "manual", "--alpha", "nan", "--beta", "2"], "--alpha 'nan' is not a finite number"),
    (["--preset", "cuszhi-tp", "--tuning", "best"], "unknown --tuning 'best'"),
    (["--preset", "cuszhi-tp", "--tuning", "4"], "unknown --tuning '4'"),
])
def test_h5fz_params_tuning_refused(h5fz_tool, args, message):
    bound = [] if "lossless" in args else ["--bound", "1e-3"]
    r = _params(h5fz_tool, args + bound)
    assert r.returncode == 2 and message in r.stderr, (r.returncode, r.stdout, r.stderr)


def test_h5fz_params_help_names_the_tuning(h5fz_tool):
    r = _params(h5fz_tool, ["--help"])
    assert r.returncode == 0
    for word in ("--tuning T", "off", "ratio-first", "quality-first", "manual", "--alpha A", "--beta B",
                 "eb / min(alpha^l, beta)", "4294967295"):
        assert word in r.stdout, word
    # test_params_missing.test_help_examples_are_accepted_for_float32 runs
    # every example through h5repack; the tuning ones must be among them.
    assert "--tuning quality-first" in r.stdout.split("examples:")[1]
    assert "--tuning manual --alpha" in r.stdout.split("examples:")[1]


def test_h5fz_compress_tuning(tmp_path, h5fz_tool, data_dir):
    raw = os.path.join(data_dir, "wmag91.float")
    base = [h5fz_tool, "compress", "--dtype", "f32", "--shape", "91,91,91", "--preset", "cuszhi-cr", "--mode", "noa",
            "--bound", "1e-3", "--verify"]
    frames = {}
    for name, extra in [("default", []), ("ratio-first", ["--tuning", "ratio-first"]), ("off", ["--tuning", "off"]),
                        ("quality-first", ["--tuning", "quality-first"]),
                        ("manual-1-1", ["--tuning", "manual", "--alpha", "1", "--beta", "1"]),
                        ("manual-1.5-4", ["--tuning", "manual", "--alpha", "1.5", "--beta", "4"]),
                        ("manual", ["--tuning", "manual", "--alpha", "2", "--beta", "8"])]:
        out = tmp_path / ("%s.fzm" % name)
        r = subprocess.run(base + extra + [raw, str(out)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        if extra:
            label = "tuning " + (extra[1] if extra[1] != "manual" else "manual alpha %s beta %s" % (extra[3], extra[5]))
            assert label in r.stdout, r.stdout
        frames[name] = out.read_bytes()
    assert frames["ratio-first"] == frames["default"]
    # manual 1, 1 keeps the spline where ratio-first may choose cuszhi-cr's
    # Lorenzo pipeline for the field (docs/FORMAT.md, preset 6): then within 4%.
    assert (frames["default"] == frames["manual-1-1"] or
            len(frames["default"]) <= 1.04 * len(frames["manual-1-1"]))
    assert len({frames["default"], frames["off"], frames["quality-first"], frames["manual"]}) == 4
    # quality-first at NOA 1e-3 is alpha 1.5, beta 4 (docs/CD_VALUES.md)
    assert frames["quality-first"] == frames["manual-1.5-4"]
    r = subprocess.run(base[:-1] + ["--tuning", "manual", raw, str(tmp_path / "x.fzm")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "needs both --alpha and --beta" in r.stderr, r.stderr
    r = subprocess.run([h5fz_tool, "compress", "--help"], capture_output=True, text=True, timeout=60)
    assert "--tuning T" in r.stdout and "quality-first" in r.stdout


def test_inspect_and_verbose_name_the_tuning(tmp_path, h5fz_tool, wmag):
    path = tmp_path / "i.h5"
    _write(path, {"m": (wmag, h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, tuning="manual", alpha=1.5, beta=4)),
                  "q": (wmag, h5fz.compression_opts("cuszhi-cr", "noa", 1e-3, tuning="quality-first"))})
    r = subprocess.run([h5fz_tool, "inspect", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "preset 5 (cuszhi-tp), mode noa, bound 0.001, tuning manual alpha 1.5 beta 4" in r.stdout, r.stdout
    assert "preset 6 (cuszhi-cr), mode noa, bound 0.001, tuning quality-first" in r.stdout, r.stdout
    # H5Z_FZ_VERBOSE: set_local says what it set up.
    code = ("import sys; sys.path[:0] = [%r, %r]; import h5fz; h5fz.register(); import h5py, numpy as np\n"
            "with h5py.File(sys.argv[1], 'w') as f:\n"
            "    f.create_dataset('d', data=np.ones((20, 20), 'f4'), chunks=(20, 20), compression=h5fz.FILTER_ID,\n"
            "                     compression_opts=h5fz.compression_opts('cuszhi-cr', 'abs', 0.5, tuning='off'))\n"
            % (os.path.join(REPO, "tools", "python"), HERE))
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "v.h5")], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, H5Z_FZ_VERBOSE="1"))
    assert r.returncode == 0, r.stderr
    assert "dataset set up: preset 6 (cuszhi-cr), mode abs, bound 0.5, tuning off" in r.stderr, r.stderr


# ---- the Python helper and the documented examples ------------------------------------

def test_docs_examples_are_the_helpers_words(tmp_path, hdf5_tools, h5fz_tool, wmag):
    """docs/CD_VALUES.md, "The spline tuning": each `opts = h5fz.compression_opts(...)`
    gives the tuple printed under it, `h5fz params` gives the h5repack line,
    and that line filters a float32 dataset."""
    with open(os.path.join(REPO, "docs", "CD_VALUES.md")) as f:
        doc = f.read()
    section = doc.split("### The spline tuning", 1)[1].split("\n### ", 1)[0]
    pairs = re.findall(r"^opts = (h5fz\.compression_opts\(.*\))\n# (\([\d, ]+\))", section, re.M)
    assert len(pairs) >= 3, section
    for call, words in pairs:
        assert eval(call, {"h5fz": h5fz}) == eval(words), call
    repack = re.findall(r"^h5repack -f (UD=[\d,]+) in\.h5 out\.h5$", section, re.M)
    params = re.findall(r"`h5fz params (--preset [^`\n]*--tuning [^`\n]*)`", section)
    assert len(repack) == 1 and len(params) == 1, (repack, params)
    r = _params(h5fz_tool, params[0].split())
    assert r.returncode == 0 and "h5repack: -f %s\n" % repack[0] in r.stdout, r.stdout + r.stderr
    src, dst = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(src, "w") as f:
        f.create_dataset("t", data=wmag)
    r = _repack(hdf5_tools, ["-f", repack[0], str(src), str(dst)])
    assert r.returncode == 0, r.stderr
    with h5py.File(dst, "r") as f:
        check_chunks_filtered(f["t"])
        assert h5fz.parse_stored(fz_filter_values(f["t"])[1])["spline_tuning_name"] == "manual"


def test_helper_compression_opts():
    lo, hi = B
    assert h5fz.compression_opts("cuszhi-cr", "noa", 1e-3) == (6, 1, lo, hi)   # unchanged without a tuning
    assert h5fz.compression_opts("cuszhi-cr", "noa", 1e-3, tuning="quality-first") == (6, 1, lo, hi) + NONE + (2,)
    assert h5fz.compression_opts(5, 1, 1e-3, None, None, "off") == (5, 1, lo, hi) + NONE + (0,)
    assert h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, tuning="Ratio_First") == (5, 1, lo, hi) + NONE + (1,)
    assert h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, tuning="manual", alpha=1.5, beta=4) == \
        (5, 1, lo, hi) + NONE + (3, 0, 1073217536, 0, 1074790400)
    f32 = h5fz.split_bound(float(np.float32(-1e34)))
    assert h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, missing=-1e34, dtype="float32", tuning=2) == \
        (5, 1, lo, hi) + f32 + (2,)
    assert h5fz.h5repack_filter("cuszhi-cr", "noa", 1e-3, dataset="t", tuning="off") == \
        "t:UD=32850,0,7,6,1,%d,%d,4294967295,4294967295,0" % (lo, hi)
    for opts, fields in [
        (h5fz.compression_opts("cuszhi-tp", "noa", 1e-3, tuning="manual", alpha=1.5, beta=4),
         {"missing": None, "spline_tuning": 3, "spline_tuning_name": "manual", "spline_tuning_given": True,
          "alpha": 1.5, "beta": 4.0}),
        (h5fz.compression_opts("cuszhi-cr", "noa", 1e-3),
         {"missing": None, "spline_tuning": 1, "spline_tuning_name": "ratio-first", "spline_tuning_given": False,
          "alpha": None, "beta": None}),
        (h5fz.compression_opts("pfpl", "noa", 1e-3) + NONE, {"missing": None, "spline_tuning": None}),
        (h5fz.compression_opts("cusz", "noa", 1e-3, missing=-1e34, dtype="float64"),
         {"missing": -1e34, "spline_tuning": None}),
    ]:
        parsed = h5fz.parse_opts(opts)
        assert {k: parsed[k] for k in fields} == fields, parsed


@pytest.mark.parametrize("kw,message", [
    ({"preset": "pfpl", "tuning": "off"}, "apply to presets cuszhi-tp and cuszhi-cr"),
    ({"preset": "cusz", "tuning": "manual", "alpha": 2, "beta": 2}, "apply to presets"),
    ({"preset": "cuszhi-cr", "alpha": 2, "beta": 2}, "alpha and beta go with tuning=\"manual\""),
    ({"preset": "cuszhi-cr", "tuning": "off", "beta": 2}, "alpha and beta go with tuning=\"manual\""),
    ({"preset": "cuszhi-cr", "tuning": "manual", "alpha": 2}, "needs both alpha and beta"),
    ({"preset": "cuszhi-cr", "tuning": "manual", "alpha": 0.5, "beta": 2}, "alpha must be a finite number in [1, 1024]"),
    ({"preset": "cuszhi-cr", "tuning": "manual", "alpha": 2, "beta": float("nan")}, "beta must be"),
    ({"preset": "cuszhi-cr", "tuning": "manual", "alpha": 2, "beta": 1025}, "beta must be"),
    ({"preset": "cuszhi-cr", "tuning": "best"}, "unknown spline tuning"),
    ({"preset": "cuszhi-cr", "tuning": 4}, "unknown spline tuning"),
    ({"preset": "cuszhi-cr", "missing": h5fz.join_bound(*NONE), "dtype": "float64"}, "placeholder"),
])
def test_helper_refuses(kw, message):
    kw = dict(kw)
    preset = kw.pop("preset")
    with pytest.raises(ValueError) as exc:
        h5fz.compression_opts(preset, "noa", 1e-3, **kw)
    assert message in str(exc.value), exc.value
