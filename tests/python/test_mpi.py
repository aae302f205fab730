"""Parallel HDF5 (issue 16): collective writes and reads
of H5Z-FZ datasets from 2 and 4 ranks (oversubscribed on a 2-core machine)
through Debian's parallel HDF5 1.10 (python3-h5py-mpi, mpi4py, Open MPI),
checked by tests/mpi/collective_check.py against one process writing the
same data: every chunk equal frame for frame, each rank's collective read
equal to the single-process values, and every element within the bound,
for every preset and mode, with chunks owned by several ranks and ragged
edges. mpirun runs Debian's /usr/bin/python3 whatever interpreter runs
pytest; without Open MPI or h5py-mpi the test skips, and fails instead under
FZ_REQUIRE_ALL_PY=1 (the README's test command, which installs them).

The second half runs tools/mpi/fz_mpi, the C program a parallel HDF5 user
would write (built here against libhdf5-openmpi-dev): the same check in C,
the rules of allocation and fill times, independent writes and in-place
overwrites, each rank's device choice (H5Z_FZ_DEVICE=cuda:local and the local
rank; a rank on the CPU writes the GPU ranks' frames), and the scaling
benchmark at a small size with every chunk checked against one process."""

import json
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHECK = os.path.join(REPO, "tests", "mpi", "collective_check.py")
MPI_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.usefixtures("plugin")


def mpi_environment():
    """Why MPI tests cannot run here, or None."""
    if not shutil.which("mpirun"):
        return "no mpirun (Debian: openmpi-bin)"
    probe = subprocess.run([MPI_PYTHON, "-c", "import mpi4py, h5py._debian_h5py_mpi"], capture_output=True, text=True,
                           timeout=60)
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "import failed"
        return "Debian's python3 lacks mpi4py or h5py-mpi (python3-mpi4py, python3-h5py-mpi): " + last
    return None


def mpi_environment_variables():
    """This process's environment for mpirun: root allowed (Open MPI refuses
    root without these; CI and the device machines run as root), and more
    ranks than cores."""
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    return env


def mpirun(ranks, *args):
    env = mpi_environment_variables()
    return subprocess.run(["mpirun", "-np", str(ranks), "--oversubscribe", MPI_PYTHON] + list(args),
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("ranks", [2, 4])
def test_collective_writes_equal_one_process(tmp_path, data_dir, ranks):
    why = mpi_environment()
    if why:
        if os.environ.get("FZ_REQUIRE_ALL_PY") == "1":
            pytest.fail("MPI tests cannot run: " + why)
        pytest.skip(why)
    r = mpirun(ranks, CHECK, "--out", str(tmp_path), "--data", data_dir)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["ranks"] == ranks and report["mpi"], report
    assert len(report["results"]) == 14
    for case in report["results"]:
        assert case["chunks"] == case["expected_chunks"], case
        assert case["filters_equal"] and case["frames_equal"], case
        assert case["reads_equal"], case
        assert case["violations"] == 0, case
        assert case["ratio"] > 1.2, case


# ---- tools/mpi/fz_mpi: the same in C, the device choice per rank, the rules, the benchmark ----

MPI_BUILD = os.path.join(REPO, "tools", "mpi", "build.sh")


def c_mpi_environment():
    """Why the C program cannot be built or run here, or None."""
    if not shutil.which("mpirun"):
        return "no mpirun (Debian: openmpi-bin)"
    if not os.path.exists("/usr/include/hdf5/openmpi/hdf5.h"):
        return "no parallel HDF5 headers (Debian: libhdf5-openmpi-dev)"
    if not (shutil.which("cc") or os.environ.get("CC")):
        return "no C compiler"
    return None


@pytest.fixture(scope="module")
def fz_mpi(tmp_path_factory):
    why = c_mpi_environment()
    if why:
        if os.environ.get("FZ_REQUIRE_ALL_PY") == "1":
            pytest.fail("MPI C tests cannot run: " + why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("fz_mpi_build")
    r = subprocess.run(["bash", MPI_BUILD, str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return os.path.join(str(out), "fz_mpi")


def run_c(args, timeout=600):
    """mpirun with ARGS (ranks and programs, MPMD with ':'); root allowed, oversubscribed."""
    env = mpi_environment_variables()
    return subprocess.run(["mpirun", "--oversubscribe"] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def assert_check_passed(report, ranks):
    assert report["ranks"] == ranks and report["passed"], report
    assert len(report["devices"]) == ranks
    assert len(report["results"]) == 14
    for case in report["results"]:
        assert case["chunks"] == case["expected_chunks"], case
        assert case["frames_equal"] and case["reads_equal"], case
        assert case["violations"] == 0, case
        assert case["ratio"] > 1.2, case
    # every allocation and fill time works with collective writes, and stores filtered chunks
    assert len(report["rules"]) == 12
    assert all(rule["works"] and rule["bad"] == 0 for rule in report["rules"]), report["rules"]
    assert report["independent_write_refused"]
    assert report["overwrite_frames_equal"]


@pytest.mark.parametrize("ranks", [2, 4])
def test_c_collective_writes_equal_one_process(fz_mpi, tmp_path, data_dir, ranks):
    """The C program's check: every preset and mode written by RANKS ranks
    (chunks shared, ragged) equals one process frame for frame; the rules
    parallel HDF5 sets hold (README, "Parallel HDF5")."""
    report_path = tmp_path / "check.json"
    r = run_c(["-np", ranks, fz_mpi, "check", "--out", tmp_path / "w", "--data", data_dir, "--json", report_path])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "check with %d ranks: passed" % ranks in r.stdout
    assert_check_passed(json.loads(report_path.read_text()), ranks)


def test_c_ranks_choose_their_device_and_a_rank_without_one_writes_the_same_frames(fz_mpi, tmp_path, data_dir):
    """One rank on the CPU, two asking for their local GPU (cuda:local): the
    frames equal one process's. Each rank reports the device the filter
    chose for it; without a GPU here, cuda:local says it runs on the CPU."""
    report_path = tmp_path / "check.json"
    program = [fz_mpi, "check", "--out", tmp_path / "w", "--data", data_dir]
    r = run_c(["-np", 1, "-x", "H5Z_FZ_DEVICE=cpu"] + program + ["--json", report_path] +
              [":", "-np", 2, "-x", "H5Z_FZ_DEVICE=cuda:local"] + program)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert_check_passed(report, 3)
    devices = report["devices"]
    assert devices[0] == "cpu", devices
    for rank in (1, 2):
        assert devices[rank].startswith("cuda"), devices
        # the local rank is the rank's own: Open MPI numbers ranks on one host from 0
        assert "local rank %d (OMPI_COMM_WORLD_LOCAL_RANK)" % rank in devices[rank], devices
        if not h5fz_device_available():
            assert devices[rank].endswith("no usable CUDA device: the CPU"), devices
    for rank in range(3):
        assert "rank %d of 3" % rank in r.stdout


def h5fz_device_available():
    import ctypes
    import h5fz
    return bool(ctypes.CDLL(h5fz.plugin_path()).h5z_fz_device_available())


@pytest.mark.parametrize("scaling", ["weak", "strong"])
def test_c_scaling_benchmark_checks_every_chunk(fz_mpi, tmp_path, data_dir, scaling):
    """The benchmark at a small size: 1 and 2 ranks, every chunk of the
    parallel file equal to one process's frame, and the sizes it reports
    are the weak or strong split asked for."""
    size = ["--mib-per-rank", "8"] if scaling == "weak" else ["--total-mib", "16"]
    reports = {}
    for ranks in (1, 2):
        report_path = tmp_path / ("bench-%d.json" % ranks)
        r = run_c(["-np", ranks, fz_mpi, "bench", "--out", tmp_path / "w", "--data", data_dir,
                   "--presets", "none,lossless,pfpl,fzgpu,cuszhi-cr", "--chunk-mib", "1", "--json", report_path] + size)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "%s scaling, %d rank(s)" % (scaling, ranks) in r.stdout
        assert "where the time goes" in r.stdout and "memory (the largest rank each)" in r.stdout
        report = json.loads(report_path.read_text())
        assert report["passed"] and report["scaling"] == scaling and len(report["devices"]) == ranks
        # the first filtered preset's untimed whole-slab write, before any timing
        assert report["first_write_s"] > 0
        assert r.stdout.index("untimed first write and read of the whole slab (lossless)") < r.stdout.index("scaling,")
        rows = {row["preset"]: row for row in report["results"]}
        assert list(rows) == ["none", "lossless", "pfpl", "fzgpu", "cuszhi-cr"]
        for name, row in rows.items():
            assert row["equal"], row
            assert row["checked"] == (name not in ("none", "lossless")), row
            assert row["write_s"] > 0 and row["read_s"] > 0
            assert row["compress_s"] <= row["write_s"] + 1e-3, row
            # each phase is the slowest rank's, as is the whole write
            assert max(row["create_s"], row["h5dwrite_s"], row["close_s"]) <= row["write_s"] + 1e-3, row
            # the filter runs inside the write's phases: in H5Dwrite, and at
            # H5Dcreate for the fill chunk parallel HDF5 allocates early
            assert row["compress_s"] <= row["create_s"] + row["h5dwrite_s"] + row["close_s"] + 1e-3, row
            assert row["fs_write_s"] > 0 and row["fs_read_s"] > 0, row
            assert min(row["write_faults"], row["write_rss_mib"], row["read_faults"], row["read_rss_mib"]) >= 0, row
        assert rows["none"]["ratio"] == pytest.approx(1.0, abs=0.01)
        assert rows["none"]["compress_s"] == 0
        assert rows["fzgpu"]["ratio"] > 4 and rows["fzgpu"]["compress_s"] > 0
        reports[ranks] = rows["fzgpu"]["bytes_per_rank"]
    if scaling == "weak":
        assert reports[1] == reports[2]
    else:
        assert reports[1] == 2 * reports[2]
    # the tables for docs/PERFORMANCE.md come from these reports
    import sys
    tables = subprocess.run([sys.executable, os.path.join(REPO, "tools", "mpi", "scaling_tables.py"),
                             str(tmp_path / "bench-1.json"), str(tmp_path / "bench-2.json"), "--label", "here"],
                            capture_output=True, text=True, timeout=60)
    assert tables.returncode == 0, tables.stderr
    rows = [line for line in tables.stdout.splitlines() if line.startswith("| %s |" % scaling)]
    assert len(rows) == 3 * 2 * 5  # rates, phases and memory; two rank counts, five presets
    assert "rank 1: auto" in tables.stdout
    assert "untimed first write and read" in tables.stdout


def test_multi_gpu_script_runs_and_reaches_the_ranks(fz_mpi, tmp_path, data_dir, plugin):
    """tools/mpi/multi_gpu_run.sh, the several-GPU runs of issue 17, at a
    small size here: weak scaling with 2 and 1 ranks, then the memory A/Bs.
    Every run ends well, its tables hold the rank counts asked for, the
    frames-in-place run's ranks write in place (H5Z_FZ_FRAME_BUFFERS=in-place)
    where the others hand frames back in buffers of their own size, with
    equal frames, every run's tables carry the memory each phase took,
    and the raised malloc thresholds reach the ranks of their run only (an
    A/B would compare nothing otherwise)."""
    env = mpi_environment_variables()
    env.update({"FZ_DATA": data_dir, "TMPDIR": str(tmp_path),
                "FZ_MPI_BUILD": os.path.dirname(fz_mpi), "RUNS": "weak malloc frames", "RANKS": "2 1",
                "MIB_PER_RANK": "8", "PRESETS": "none,fzgpu", "H5Z_FZ_VERBOSE": "1"})
    env.pop("GLIBC_TUNABLES", None)
    env.pop("H5Z_FZ_FRAME_BUFFERS", None)
    out = tmp_path / "out"
    r = subprocess.run(["bash", os.path.join(REPO, "tools", "mpi", "multi_gpu_run.sh"), plugin, str(out), "2"],
                       cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:] + summary[-3000:]
    for run in ("weak", "malloc-as-is", "frames-in-place", "malloc-raised"):
        assert "#### %s: exit 0" % run in summary, summary
    handed_back = "frames handed back in buffers of their own size"
    for run in ("weak", "malloc-as-is", "malloc-raised"):
        assert handed_back in (out / run / "weak-2.log").read_text(), run
    assert "frames handed back" not in (out / "frames-in-place" / "weak-2.log").read_text()
    in_place = (out / "frames-in-place" / "tables.md").read_text()
    assert "| weak | 2 | fzgpu |" in in_place and "equal" in in_place, in_place
    assert "H5Z_FZ_FRAME_BUFFERS=in-place" in in_place
    for run in ("weak", "malloc-as-is", "malloc-raised"):
        tables = (out / run / "tables.md").read_text()
        assert "H5Z_FZ_FRAME_BUFFERS" not in tables and "Memory (the largest rank each)" in tables, run
    weak = (out / "weak" / "tables.md").read_text()
    for ranks in (1, 2):
        assert "| weak | %d | fzgpu |" % ranks in weak, weak
    as_is = (out / "malloc-as-is" / "tables.md").read_text()
    raised = (out / "malloc-raised" / "tables.md").read_text()
    assert "GLIBC_TUNABLES" not in as_is, as_is
    assert "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296" in raised
    assert "| weak | 2 | fzgpu |" in raised and "equal" in raised
    assert not list(tmp_path.glob("fz_mpi_work_*")), "work folders left behind"


WRITE_CHUNKS = r"""
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[3])
import h5fz
field = np.fromfile(sys.argv[2] + "/wmag91.float", dtype="<f4").reshape(91, 91, 91)
data = np.concatenate([field, field[::-1]])
with h5py.File(sys.argv[1], "w") as f:
    for preset in ("fzgpu", "cuszhi-cr", "lossless"):
        f.create_dataset(preset, data=data, chunks=(26, 91, 91), **h5fz.FZ(preset=preset, noa=1e-3)
                         if preset != "lossless" else h5fz.FZ(preset="lossless"))
"""


def test_a_rank_hands_back_frame_sized_buffers_with_the_same_bytes(tmp_path, data_dir, plugin):
    """A process started by an MPI launcher hands HDF5 frames in buffers of
    their own size (parallel HDF5 keeps every chunk's buffer until its
    collective write), where one process leaves them in the chunk's buffer;
    H5Z_FZ_FRAME_BUFFERS=in-place and =own override either. Said under
    H5Z_FZ_VERBOSE for lossy presets only (lossless frames are more than half
    the chunk), and the stored chunks are the same bytes every way."""
    import sys
    import h5py
    launchers = ("OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                 "PALS_LOCAL_RANKID", "SLURM_LOCALID")
    outputs = {}
    for name, launcher, setting in (("alone", None, None), ("rank", "PALS_LOCAL_RANKID", None),
                                    ("rank-in-place", "PALS_LOCAL_RANKID", "in-place"), ("alone-own", None, "own")):
        env = {k: v for k, v in os.environ.items() if k not in launchers and k != "H5Z_FZ_FRAME_BUFFERS"}
        env.update({"H5Z_FZ_VERBOSE": "1", "H5Z_FZ_DEVICE": "cpu"})
        if launcher:
            env[launcher] = "1"
        if setting:
            env["H5Z_FZ_FRAME_BUFFERS"] = setting
        path = tmp_path / (name + ".h5")
        r = subprocess.run([sys.executable, "-c", WRITE_CHUNKS, str(path), data_dir,
                            os.path.join(REPO, "tools", "python")],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        outputs[name] = (path, r.stderr)
    said = "a rank of a parallel job (PALS_LOCAL_RANKID): frames handed back in buffers of their own size"
    assert said in outputs["rank"][1], outputs["rank"][1][-2000:]
    assert "frames handed back" not in outputs["alone"][1]
    assert "frames handed back" not in outputs["rank-in-place"][1]
    assert "H5Z_FZ_FRAME_BUFFERS=own: frames handed back in buffers of their own size" in outputs["alone-own"][1]
    for other in ("rank", "rank-in-place", "alone-own"):
        with h5py.File(outputs["alone"][0], "r") as a, h5py.File(outputs[other][0], "r") as b:
            for preset in ("fzgpu", "cuszhi-cr", "lossless"):
                da, db = a[preset], b[preset]
                assert da.id.get_num_chunks() == db.id.get_num_chunks() == 7
                for i in range(da.id.get_num_chunks()):
                    offset = da.id.get_chunk_info(i).chunk_offset
                    assert da.id.read_direct_chunk(offset) == db.id.read_direct_chunk(offset), (preset, offset)
                if preset != "lossless":
                    assert da.id.get_storage_size() * 2 < da.size * da.dtype.itemsize  # lossy: under half a chunk
