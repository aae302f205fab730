"""`h5fz params` and h5fz.compression_opts give a missing value the filter
accepts for the variable's type (issue 12, item 4): the examples printed by
`h5fz params --help` and shown in the docs are run, and h5repack with their
words must really filter a float32 dataset (a refused missing value makes
h5repack copy the dataset unfiltered and still exit 0)."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import h5py

import h5fz
import fz_samples
from conftest import REPO, check_chunks_filtered, filter_codes, fz_filter_values

pytestmark = pytest.mark.usefixtures("plugin")


def run_params(h5fz_tool, args):
    r = subprocess.run([h5fz_tool, "params"] + args, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, "h5fz params %s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr)
    repack = re.search(r"^h5repack: -f (\S+)$", r.stdout, re.M).group(1)
    opts = re.search(r"^h5py: .*compression_opts=(\(.*\))$", r.stdout, re.M).group(1)
    return repack, tuple(int(v) for v in re.findall(r"\d+", opts)), r.stderr


def float32_file(path, fill=None):
    """A float32 field (wmag91) with a land block set to `fill`."""
    data = fz_samples.load_real("wmag91.float")[:32].copy()
    if fill is not None:
        data[:, :20, :30] = fill
    with h5py.File(path, "w") as f:
        f.create_dataset("t", data=data, chunks=(16, 91, 91))
    return data


def assert_filtered_by_h5repack(tmp_path, hdf5_tools, filter_arg, name):
    src, dst = tmp_path / (name + "_in.h5"), tmp_path / (name + "_out.h5")
    data = float32_file(src, fill=np.float32(-1e34))
    r = subprocess.run([hdf5_tools["h5repack"], "-f", filter_arg, str(src), str(dst)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    dump = subprocess.run([hdf5_tools["h5dump"], "-pH", str(dst)], capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    assert "32850" in dump.stdout, "h5repack -f %s left the float32 dataset unfiltered:\n%s" % (filter_arg, dump.stdout)
    with h5py.File(dst, "r") as f:
        d = f["t"]
        assert filter_codes(d) == [h5fz.FILTER_ID]
        check_chunks_filtered(d)
        assert h5fz.is_stored_layout(fz_filter_values(d)[1])
        back = d[:]
    if filter_arg.split("UD=")[1].split(",")[2] == "6":  # with a missing value: kept exactly
        land = data == np.float32(-1e34)
        assert land.any() and np.array_equal(back[land], data[land])


def help_examples(h5fz_tool):
    r = subprocess.run([h5fz_tool, "params", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    lines = r.stdout.split("examples:", 1)[1].strip().splitlines()
    return [line.strip() for line in lines if line.strip()]


def test_help_examples_are_accepted_for_float32(tmp_path, h5fz_tool, hdf5_tools):
    examples = help_examples(h5fz_tool)
    params = [e for e in examples if e.startswith("h5fz params")]
    assert any("--missing" in e for e in params), examples
    for i, example in enumerate(params):
        repack, opts, _ = run_params(h5fz_tool, shlex.split(example)[2:])
        assert repack == "UD=32850,0,%d,%s" % (len(opts), ",".join(map(str, opts)))
        assert_filtered_by_h5repack(tmp_path, hdf5_tools, repack, "example%d" % i)
    # The shell example, run as printed (h5fz on PATH, in.h5 -> out.h5).
    shell = [e for e in examples if e.startswith("h5repack")]
    assert shell, examples
    float32_file(tmp_path / "in.h5")
    env = dict(os.environ, PATH=os.path.dirname(h5fz_tool) + os.pathsep + os.environ["PATH"])
    for example in shell:
        r = subprocess.run(["bash", "-c", "set -eo pipefail; " + example], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        with h5py.File(tmp_path / "out.h5", "r") as f:
            assert filter_codes(f["t"]) == [h5fz.FILTER_ID]
            check_chunks_filtered(f["t"])
        os.remove(tmp_path / "out.h5")


def test_docs_params_examples_are_accepted(tmp_path, h5fz_tool, hdf5_tools):
    found = []
    for doc in ("README.md", os.path.join("docs", "CD_VALUES.md")):
        with open(os.path.join(REPO, doc)) as f:
            found += re.findall(r"`h5fz params (--preset [^`\n]*--missing [^`\n]*)`", f.read())
    assert found, "no `h5fz params ... --missing` example in README.md or docs/CD_VALUES.md"
    for i, args in enumerate(found):
        repack, _, _ = run_params(h5fz_tool, shlex.split(args))
        assert_filtered_by_h5repack(tmp_path, hdf5_tools, repack, "doc%d" % i)


def test_missing_rounded_to_dtype(h5fz_tool):
    f32 = float(np.float32(-1e34))
    _, opts, note = run_params(h5fz_tool, ["--preset", "pfpl", "--mode", "noa", "--bound", "1e-3",
                                           "--missing", "-1e34"])
    assert h5fz.join_bound(opts[4], opts[5]) == f32
    assert "float32" in note, "no word on stderr that float32 was assumed: %r" % note
    _, opts, note = run_params(h5fz_tool, ["--preset", "pfpl", "--mode", "noa", "--bound", "1e-3",
                                           "--missing", "-1e34", "--dtype", "float32"])
    assert h5fz.join_bound(opts[4], opts[5]) == f32 and note == ""
    _, opts, _ = run_params(h5fz_tool, ["--preset", "cusz", "--mode", "abs", "--bound", "1e-3",
                                        "--missing", "-1e34", "--dtype", "float64"])
    assert h5fz.join_bound(opts[4], opts[5]) == -1e34
    for bad in (["--missing", "1e40"], ["--missing", "-1", "--dtype", "int32"]):
        r = subprocess.run([h5fz_tool, "params", "--preset", "pfpl", "--bound", "1e-3"] + bad,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and r.stderr, (bad, r.stdout)


def test_python_helper_words_accepted_for_float32(tmp_path, hdf5_tools):
    """h5fz.h5repack_filter / compression_opts with the decimal -1e34 give
    words a float32 dataset accepts (rounded), under h5repack and h5py."""
    arg = h5fz.h5repack_filter("pfpl", "noa", 1e-3, dataset="t", missing=-1e34, dtype="float32")
    assert_filtered_by_h5repack(tmp_path, hdf5_tools, arg, "helper")
    data = fz_samples.load_real("wmag91.float")[:32].copy()
    data[:, :20, :30] = np.float32(-1e34)
    with h5py.File(tmp_path / "h5py.h5", "w") as f:
        d = f.create_dataset("t", data=data, chunks=(16, 91, 91), compression=h5fz.FILTER_ID,
                             compression_opts=h5fz.compression_opts("pfpl", "noa", 1e-3, missing=-1e34,
                                                                    dtype="float32"))
        check_chunks_filtered(d)
        # The missing value is kept in its own words; HDF5's fill value (none
        # here) is never displaced by it (issue 28 item 1).
        stored = h5fz.parse_stored(fz_filter_values(d)[1])
        assert stored["missing"] == float(np.float32(-1e34)) and stored["fill_defined"] == 0, stored
        assert np.array_equal(d[:, :20, :30], data[:, :20, :30])


def test_cd_values_doc_lists_the_built_presets(tmp_path):
    """docs/CD_VALUES.md says which presets are built; the filter agrees."""
    with open(os.path.join(REPO, "docs", "CD_VALUES.md")) as f:
        doc = f.read()
    built = re.search(r"Built today: presets ([\d, ]+) \(", doc)
    refused = re.search(r"Refused until built: (none|presets ([\d, ]+) \()", doc)
    assert built and refused, "no 'Built today: presets ...' / 'Refused until built: presets ...' in CD_VALUES.md"
    doc_built = {int(v) for v in re.findall(r"\d+", built.group(1))}
    doc_refused = {int(v) for v in re.findall(r"\d+", refused.group(2) or "")}
    accepted, not_built = {0}, set()   # preset 0 (no values) is the lossless default
    with h5py.File(tmp_path / "presets.h5", "w") as f:
        for preset in sorted(h5fz.PRESET_NAMES)[1:]:   # every id of the preset table but 0
            opts = h5fz.compression_opts(preset, "abs", 1e-3) if preset in h5fz.LOSSY_PRESETS \
                else h5fz.compression_opts(preset)
            try:
                f.create_dataset("p%d" % preset, shape=(8, 8), dtype="<f4", chunks=(4, 4),
                                 compression=h5fz.FILTER_ID, compression_opts=opts)
                accepted.add(preset)
            except ValueError as e:
                assert "not available" in str(e), e
                not_built.add(preset)
    assert doc_built == accepted and doc_refused == not_built, (doc_built, doc_refused, accepted, not_built)
