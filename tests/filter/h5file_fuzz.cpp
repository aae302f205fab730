// libFuzzer target: HDF5 files whose chunks are replaced by frames from other
// datasets, forged frames (valid CRCs, wrong sizes, wrong dtypes) and mutated
// ones, for every dtype kind. The harness (h5file_harness.hpp) is shared with
// the ASan replay test h5file_replay.cpp.
#include <cstddef>
#include <cstdint>

#include "h5file_harness.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fz::h5file::Harness::instance().self_check();  // build the file before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fz::h5file::Outcome outcome = fz::h5file::Harness::instance().run_input(data, size);
  if (outcome.violation) fz::h5file::die(outcome.message);
  return 0;
}
