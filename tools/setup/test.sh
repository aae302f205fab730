#!/usr/bin/env bash
# THE test command of H5Z-FZ (README, .ci/run): installs what is missing, builds,
# runs GoogleTest (CPU labels), the sanitizer build, its tests and the h5fz tool's
# hostile-file tests under it, every libFuzzer
# target for a bounded time, pytest under three HDF5 versions, and the wheel
# (pip wheel . + auditwheel) installed into fresh venvs. Runs every
# step even when an earlier one failed, prints a summary, exits non-zero when
# anything failed.
#
#   FZ_FUZZ_SECONDS   seconds per fuzz target (default 20; 0 skips fuzzing); FZ_JOBS
#                     targets run at a time, each on its own core
#   FZ_SKIP           space-separated steps to skip: deps build ctest asan fuzz pytest wheel,
#                     or single ones: asan:build asan:ctest fuzz:build fuzz:run pytest:A ...
#   FZ_JOBS           parallel build/test jobs (default: cores)
#   FZ_CMAKE_ARGS     extra CMake arguments for the main build. Unset on a machine
#                     with no NVIDIA device (CI), the CUDA code is compiled for
#                     sm_75 and sm_90 with PTX only, the oldest and the newest of
#                     the default five (the same sources; their GPU tests run on
#                     the GPU machine): half the CUDA compile time
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$FZ_REPO"

FZ_FUZZ_SECONDS="${FZ_FUZZ_SECONDS:-20}"
FZ_SKIP=" ${FZ_SKIP:-} "
ASAN_DIR="${FZ_ASAN_DIR:-$FZ_REPO/build-asan}"
FUZZ_DIR="${FZ_FUZZ_DIR:-$FZ_REPO/build-fuzz}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

declare -a SUMMARY=()
FAILED=0
PASSED=0
T0=$SECONDS

# step NAME FUNCTION: runs FUNCTION in a subshell with errexit on, records the result.
step() {
  local name="$1" fn="$2" start=$SECONDS rc
  if [[ "$FZ_SKIP" == *" ${name%%:*} "* || "$FZ_SKIP" == *" ${name%% *} "* ]]; then
    SUMMARY+=("$(printf '%-28s %-6s %5s' "$name" SKIP -)"); return 0
  fi
  fz_say "[$name]"
  set +e
  ( set -euo pipefail; "$fn" )
  rc=$?
  set -e
  local secs=$((SECONDS - start))
  if ((rc == 0)); then
    PASSED=$((PASSED + 1)); SUMMARY+=("$(printf '%-28s %-6s %4ss' "$name" PASS "$secs")")
  else
    FAILED=$((FAILED + 1)); SUMMARY+=("$(printf '%-28s %-6s %4ss  (exit %d)' "$name" FAIL "$secs" "$rc")")
    fz_say "[$name] FAILED (exit $rc)"
  fi
  return 0
}

do_deps() { bash tools/setup/deps.sh; }
do_build() {
  if [[ -z "${FZ_CMAKE_ARGS+set}" ]] && ! compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
    fz_note "no NVIDIA device here: CUDA compiled for sm_75 and sm_90 (+PTX) only"
    FZ_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=75-real;90" bash tools/setup/build.sh
  else
    bash tools/setup/build.sh
  fi
}
do_ctest() { ctest --test-dir "$FZ_BUILD_DIR" -L cpu --output-on-failure --no-tests=error -j "$FZ_JOBS"; }

do_asan_build() {
  cmake -S . -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFZ_SANITIZE=ON -DFZ_ENABLE_CUDA=OFF -DFZ_BUILD_TOOLS=ON
  cmake --build "$ASAN_DIR" -j "$FZ_JOBS"
}
do_asan_ctest() { ctest --test-dir "$ASAN_DIR" -L cpu --output-on-failure --no-tests=error -j "$FZ_JOBS"; }
# The h5fz tool built with ASan+UBSan under the tests that hand it hostile and
# extreme files (repack: user types, user blocks, references, full disks,
# crashes; read: huge sparse shapes, forged frames, variable-length data;
# compare). Python and the plugin it loads are the Release build; only the
# tool's processes are instrumented. verify_asan_link_order=0: some tests
# preload a small counting or frame-swapping library into the tool.
do_asan_tools() {
  HDF5_PLUGIN_PATH="$FZ_BUILD_DIR/plugin" FZ_H5FZ="$ASAN_DIR/tools/h5fz" \
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    "$(fz_python_a)" -m pytest -p no:cacheprovider -q -rfEs tests/python/test_repack_hostile.py \
    tests/python/test_repack_verify_rule.py tests/python/test_repack.py tests/python/test_read_checks.py \
    tests/python/test_read.py tests/python/test_compare.py
}

do_fuzz_build() {
  cmake -S . -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DFZ_FUZZ=ON -DFZ_BUILD_TESTS=OFF -DFZ_ENABLE_CUDA=OFF
  cmake --build "$FUZZ_DIR" -j "$FZ_JOBS"
}
# One target for FZ_FUZZ_SECONDS; its exit status in $FUZZ_DIR/NAME.rc, what
# it says in $FUZZ_DIR/NAME.out.
fuzz_one() {
  local f="$1" name corpus rc=0
  name="$(basename "$f")"
  corpus="$FUZZ_DIR/corpus/$name"   # kept between runs; crashes go to $FUZZ_DIR/crash-*
  mkdir -p "$corpus"
  # The frame parser needs real frames to start from: the golden corpus.
  [[ "$name" == frame_fuzz ]] && cp -n "$FZ_REPO"/tests/golden/v*/*.fzm "$corpus"/ 2>/dev/null
  {
    if "$f" "$corpus" -max_total_time="$FZ_FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 \
         -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/$name-" >"$FUZZ_DIR/$name.log" 2>&1; then
      grep -E '^stat::number_of_executed_units' "$FUZZ_DIR/$name.log" | sed "s/^/    $name /" || true
    else
      rc=1
      echo "---- $name FAILED; last lines of $FUZZ_DIR/$name.log:"; tail -n 60 "$FUZZ_DIR/$name.log"
    fi
  } >"$FUZZ_DIR/$name.out" 2>&1
  echo "$rc" >"$FUZZ_DIR/$name.rc"
}
do_fuzz_run() {
  local fuzzers=() f name failed=0
  mapfile -t fuzzers < <(find "$FUZZ_DIR" -type f -name '*_fuzz' -perm -u+x | sort)
  ((${#fuzzers[@]})) || { echo "no *_fuzz executables in $FUZZ_DIR"; return 1; }
  if [[ "$FZ_FUZZ_SECONDS" == 0 ]]; then echo "FZ_FUZZ_SECONDS=0: built, not run"; return 0; fi
  # FZ_JOBS targets at a time: each is one process on one core, so each still
  # runs its FZ_FUZZ_SECONDS on a core of its own (CI: two cores, half the time).
  fz_note "${#fuzzers[@]} targets, ${FZ_FUZZ_SECONDS}s each, $FZ_JOBS at a time"
  for f in "${fuzzers[@]}"; do
    rm -f "$FUZZ_DIR/$(basename "$f").rc"
    while (($(jobs -rp | wc -l) >= FZ_JOBS)); do wait -n || true; done
    fuzz_one "$f" &
  done
  wait || true
  for f in "${fuzzers[@]}"; do
    name="$(basename "$f")"
    cat "$FUZZ_DIR/$name.out" 2>/dev/null || true
    case "$(cat "$FUZZ_DIR/$name.rc" 2>/dev/null || echo none)" in
      0) ;;
      1) failed=1 ;;
      *) echo "---- $name: no result"; failed=1 ;;
    esac
  done
  return "$failed"
}

pytest_under() {
  local py="$1"
  echo "python: $py ($(fz_h5py_version "$py" || echo 'no h5py'))"
  HDF5_PLUGIN_PATH="$FZ_BUILD_DIR/plugin" FZ_REQUIRE_ALL_PY=1 \
  FZ_PY_A="$(fz_python_a)" FZ_PY_B="$(fz_python_b)" FZ_PY_C="$(fz_python_c)" \
    "$py" -m pytest -p no:cacheprovider -q -rfEs tests/python
}
do_pytest_a() { pytest_under "$(fz_python_a)"; }
do_pytest_b() { pytest_under "$(fz_python_b)"; }
do_pytest_c() { pytest_under "$(fz_python_c)"; }

# The wheel as `pip wheel .` builds it from this clone, repaired by auditwheel,
# then installed into fresh venvs that hold nothing else (tests/python/test_wheel.py).
# CPU-only here unless FZ_WHEEL_CUDA says otherwise: the CUDA wheel's fatbin
# (five architectures) would add about ten minutes on two cores; the CUDA
# wheel is built and tested on the GPU machine (tools/setup/gpu_wheel.sh).
do_wheel() {
  local wheel
  wheel="$(FZ_WHEEL_CUDA="${FZ_WHEEL_CUDA:-OFF}" bash tools/setup/wheel.sh | tail -n 1)"
  [[ -f "$wheel" ]] || { echo "tools/setup/wheel.sh gave no wheel"; return 1; }
  FZ_WHEEL="$wheel" "$(fz_python_a)" -m pytest -p no:cacheprovider -q -rfEs tests/python/test_wheel.py
}

step deps do_deps
step build do_build
step ctest do_ctest
step asan:build do_asan_build
step asan:ctest do_asan_ctest
step asan:tools do_asan_tools
step fuzz:build do_fuzz_build
step fuzz:run do_fuzz_run
step "pytest:A (HDF5 2.0)" do_pytest_a
step "pytest:B (HDF5 1.14)" do_pytest_b
step "pytest:C (HDF5 1.10)" do_pytest_c
step wheel do_wheel

echo
echo "================ H5Z-FZ test summary ($((SECONDS - T0))s) ================"
printf '%s\n' "${SUMMARY[@]}"
echo "steps: $PASSED passed, $FAILED failed"
((FAILED == 0))
