"""The house's rules (docs/ARCHITECTURE.md), checked by tools/check/layers.py:
every include points down the floors (tools -> filter -> engine -> kernels ->
kernels/common) and no non-test source is over 500 lines. The first test runs
the checker on this repository, so CI fails the day an include runs back up
or a file outgrows a sitting; the others show the checker finds both."""

import os
import subprocess
import sys

from conftest import REPO

CHECKER = os.path.join(REPO, "tools", "check", "layers.py")


def run_checker(root=None):
    command = [sys.executable, CHECKER] + (["--root", str(root)] if root else [])
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def write(root, path, text):
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)


def test_this_repository_keeps_the_rules():
    result = run_checker()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every include points down" in result.stdout


def test_an_include_that_runs_back_up_is_a_breach(tmp_path):
    write(tmp_path, "engine/src/pipeline.hpp", "#pragma once\n")
    write(tmp_path, "engine/src/flow.cpp", '#include "pipeline.hpp"\n#include "common/bytes.hpp"\n')
    write(tmp_path, "kernels/common/bytes.hpp", "#pragma once\n")
    # The stage contract reaching up into the engine, as before issue 29.
    write(tmp_path, "kernels/common/stage/stage.hpp", '#include "pipeline.hpp"\n')
    write(tmp_path, "kernels/rze/rze_stage.cpp", '#include "common/bytes.hpp"\n#include "fz/fz.hpp"\n')
    write(tmp_path, "engine/include/fz/fz.hpp", "#pragma once\n")
    write(tmp_path, "filter/plugin.cpp", '#include "fz/fz.hpp"\n')
    result = run_checker(tmp_path)
    assert result.returncode == 1
    breaches = result.stdout.splitlines()
    assert breaches == [
        "kernels/common/stage/stage.hpp:1: includes engine/src/pipeline.hpp, which stands above it "
        "(kernels/common -> engine)",
        "kernels/rze/rze_stage.cpp:2: includes engine/include/fz/fz.hpp, which stands above it "
        "(kernels -> engine)",
    ]


def test_a_long_source_is_a_breach_but_a_long_test_is_not(tmp_path):
    write(tmp_path, "tools/h5fz/cmd_long.cpp", "// x\n" * 501)
    write(tmp_path, "tools/python/h5fz/short.py", "x = 1\n" * 500)
    write(tmp_path, "tests/python/test_long.py", "x = 1\n" * 900)
    write(tmp_path, "kernels/rze/rze_test.cpp", "// x\n" * 900)
    result = run_checker(tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "tools/h5fz/cmd_long.cpp:501: 501 lines, over 500: split it along its seams"]
