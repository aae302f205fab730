// The H5Z_FZ_* environment variables, mapped onto the engine's policy
// (fz::Options' policy fields, fz.hpp). The engine reads no environment: the
// filter and the h5fz tools call this. README.md ("Environment") lists them:
//   H5Z_FZ_DEVICE   auto | cpu | cuda | cuda:N          -> Options::device
//   H5Z_FZ_THREADS  CPU threads (a positive number)      -> Options::threads
//   H5Z_FZ_CPU      baseline: no optional x86-64 paths   -> Options::cpu_features
//   H5Z_FZ_GPU_COPY staged | direct (for measurements)   -> Options::gpu_copies
//   H5Z_FZ_VERBOSE  set (not "0"): say which backend runs and every GPU fallback
// The engine's messages go to stderr prefixed "H5Z-FZ: ": warnings always,
// information only under H5Z_FZ_VERBOSE.
#pragma once

#include "fz/fz.hpp"

namespace fz::filter {

// Read once per process; a value that means nothing is ignored (and said
// under H5Z_FZ_VERBOSE; the engine says a device it cannot use, always). Only the policy fields of the result are set.
const Options& policy_from_environment();

// Copies the policy fields of `policy` into `options`.
void apply_policy(const Options& policy, Options& options);

// H5Z_FZ_VERBOSE is set (and not "0").
bool verbose_environment();

}  // namespace fz::filter
