// The H5Z-FZ HDF5 filter plugin: H5PLget_plugin_type/info (the only exported
// symbols), can_apply, set_local and the filter callback.
//
// Every entry point takes its caller's return address first, to bind to the
// libhdf5 that called it (hdf5_binding.hpp), catches everything (no exception
// crosses into C) and reports failures through H5Epush with a message.
#include <H5PLextern.h>
#include <hdf5.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "filter_totals.hpp"
#include "plugin_internal.hpp"

namespace fz::filter {
namespace {

// Binds, registers the error class, runs `body` and turns any failure into
// `failure` plus a message on HDF5's error stack.
template <typename Result, typename Body>
Result guarded(const void* caller, const char* function, int line, Result failure, Body&& body,
               bool filter_callback = false) noexcept {
  const Hdf5Api* api = hdf5_api_for(caller);
  if (api == nullptr) {
    std::fprintf(stderr, "H5Z-FZ: %s: cannot find the HDF5 library that called the filter\n", function);
    return failure;
  }
  try {
    api->ensure_error_class();
    return body(*api);
  } catch (const Refusal& refusal) {
    try {
      if (filter_callback) {
        api->report_from_filter(refusal.problem, __FILE__, function, line, refusal.message);
      } else {
        api->report(refusal.problem, __FILE__, function, line, refusal.message);
      }
    } catch (...) {
      std::fprintf(stderr, "H5Z-FZ: %s\n", refusal.message.c_str());
    }
  } catch (...) {
    // Only Refusal escapes the bodies; anything else is out of memory while
    // building a message.
    std::fprintf(stderr, "H5Z-FZ: %s failed (out of memory)\n", function);
  }
  return failure;
}

// __builtin_return_address must be taken in the function HDF5 calls, so the
// entry points stay out of line.
__attribute__((noinline)) htri_t fz_can_apply(hid_t dcpl, hid_t type, hid_t space) {
  return guarded(__builtin_return_address(0), "H5Z-FZ can_apply", __LINE__, htri_t{-1},
                 [&](const Hdf5Api& api) {
                   try {
                     return can_apply(api, dcpl, type, space);
                   } catch (...) {
                     rethrow_as_refusal(Problem::BadParameters);
                   }
                 });
}

__attribute__((noinline)) herr_t fz_set_local(hid_t dcpl, hid_t type, hid_t space) {
  return guarded(__builtin_return_address(0), "H5Z-FZ set_local", __LINE__, herr_t{-1},
                 [&](const Hdf5Api& api) {
                   try {
                     return set_local(api, dcpl, type, space);
                   } catch (...) {
                     rethrow_as_refusal(Problem::BadParameters);
                   }
                 });
}

__attribute__((noinline)) size_t fz_filter(unsigned flags, size_t cd_count, const unsigned cd[],
                                                      size_t nbytes, size_t* buf_size, void** buf) {
  return guarded(__builtin_return_address(0), "H5Z-FZ filter", __LINE__, size_t{0}, [&](const Hdf5Api& api) {
    if (buf == nullptr || *buf == nullptr || buf_size == nullptr) {
      throw Refusal{Problem::BadParameters, "the filter was called without a buffer"};
    }
    if (nbytes > *buf_size) {
      throw Refusal{Problem::BadParameters, "HDF5 passed " + std::to_string(nbytes) + " bytes in a buffer of " +
                                                std::to_string(*buf_size)};
    }
    const bool reverse = (flags & H5Z_FLAG_REVERSE) != 0;
    const auto start = std::chrono::steady_clock::now();
    const size_t result = reverse ? decompress_chunk(api, cd_count, cd, nbytes, buf_size, buf)
                                  : compress_chunk(api, cd_count, cd, nbytes, buf_size, buf);
    const uint64_t ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    FilterTotals& totals = filter_totals();
    (reverse ? totals.decompress_ns : totals.compress_ns).fetch_add(ns, std::memory_order_relaxed);
    (reverse ? totals.decompressed_chunks : totals.compressed_chunks).fetch_add(1, std::memory_order_relaxed);
    return result;
  }, true);
}

}  // namespace

FilterTotals& filter_totals() {
  static FilterTotals totals;
  return totals;
}

namespace {

const H5Z_class2_t kFilterClass = {
    H5Z_CLASS_T_VERS,
    static_cast<H5Z_filter_t>(kFilterId),
    1,  // encoder present
    1,  // decoder present
    kFilterName,
    fz_can_apply,
    fz_set_local,
    fz_filter,
};

}  // namespace
}  // namespace fz::filter

extern "C" __attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

extern "C" __attribute__((visibility("default"), noinline)) const void* H5PLget_plugin_info(void) {
  // Binding here, once, makes a missing or too old HDF5 visible when the
  // plugin is loaded rather than at the first chunk.
  if (fz::filter::hdf5_api_for(__builtin_return_address(0)) == nullptr) {
    std::fprintf(stderr,
                 "H5Z-FZ: no HDF5 library (1.8.15 or later) found in this process; the filter is not registered\n");
    return nullptr;
  }
  return &fz::filter::kFilterClass;
}
