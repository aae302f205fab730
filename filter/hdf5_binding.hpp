// The HDF5 functions the plugin calls, resolved at run time from the libhdf5
// that called it, never linked: h5py and conda bring their own HDF5, and a
// second copy in the process breaks every H5P/H5T call. Two copies may still
// be loaded on purpose (h5py's and netCDF4's wheels), so there is one table per
// calling library, found from the caller's return address.
//
// Only functions are resolved, never data symbols (H5E_*_g, H5T_NATIVE_*_g
// changed names in HDF5 2.0): the filter registers its own error class and
// messages in each library it binds to.
#pragma once

#include <hdf5.h>

#include <string>

namespace fz::filter {

// Pointer types taken from the declarations in the headers we build against,
// so a typo in a signature is a compile error. These signatures are unchanged
// from HDF5 1.8.15 to 2.0.
struct Hdf5Api {
  decltype(&::H5Pget_chunk) Pget_chunk = nullptr;
  decltype(&::H5Pget_filter_by_id2) Pget_filter_by_id2 = nullptr;
  decltype(&::H5Pmodify_filter) Pmodify_filter = nullptr;
  decltype(&::H5Pget_nfilters) Pget_nfilters = nullptr;
  decltype(&::H5Pget_filter2) Pget_filter2 = nullptr;
  decltype(&::H5Pfill_value_defined) Pfill_value_defined = nullptr;
  decltype(&::H5Pget_fill_value) Pget_fill_value = nullptr;
  decltype(&::H5Tget_class) Tget_class = nullptr;
  decltype(&::H5Tget_size) Tget_size = nullptr;
  decltype(&::H5Tget_sign) Tget_sign = nullptr;
  decltype(&::H5Tget_order) Tget_order = nullptr;
  decltype(&::H5Tget_fields) Tget_fields = nullptr;
  decltype(&::H5Tget_ebias) Tget_ebias = nullptr;
  decltype(&::H5Tis_variable_str) Tis_variable_str = nullptr;
  decltype(&::H5Tdetect_class) Tdetect_class = nullptr;
  decltype(&::H5Eregister_class) Eregister_class = nullptr;
  decltype(&::H5Ecreate_msg) Ecreate_msg = nullptr;
  decltype(&::H5Epush2) Epush2 = nullptr;
  decltype(&::H5allocate_memory) allocate_memory = nullptr;
  decltype(&::H5free_memory) free_memory = nullptr;
  decltype(&::H5resize_memory) resize_memory = nullptr;

  std::string library_path;  // for H5Z_FZ_VERBOSE
  unsigned version_major = 0, version_minor = 0, version_release = 0;  // H5get_libversion

  // HDF5 1.14 and later run filter callbacks between saving and restoring
  // the error stack, so what the filter callback pushes never reaches the
  // application (HDF5 2.0.0 under h5py: only "filter returned failure during
  // read"). set_local's messages are kept. Failures of the filter callback
  // are therefore also printed on stderr with these versions.
  bool filter_errors_dropped() const { return version_major > 1 || (version_major == 1 && version_minor >= 14); }

  // Which minor message a failure reports under.
  enum class Problem { BadParameters, Compress, Decompress, Hdf5Call };

  // Pushes `message` on the default error stack under the filter's own error
  // class; falls back to stderr if the class could not be registered. Call it
  // after the last other HDF5 call of an entry point: every API call clears
  // the stack on entry.
  void report(Problem problem, const char* file, const char* function, int line, const std::string& message) const;
  // The same for the filter callback: also on stderr where HDF5 drops it
  // (at most a few dozen times per process, so a damaged file cannot flood).
  void report_from_filter(Problem problem, const char* file, const char* function, int line,
                          const std::string& message) const;

  // Registers the error class and messages once per library. Called at the
  // start of each entry point (it clears the error stack, so not in the middle
  // of reporting).
  void ensure_error_class() const;

  struct ErrorIds;
  ErrorIds* errors = nullptr;  // owned, never freed (see hdf5_binding.cpp)
};

// The table for the library that contains `caller` (a return address inside
// libhdf5), resolved on first use and cached; nullptr when no HDF5 with the
// needed functions is loaded. Thread-safe. After the first call from a given
// return address, later calls from it are a lock-free scan of a small table
// (no dladdr): the filter callback runs this once per chunk.
const Hdf5Api* hdf5_api_for(const void* caller);

}  // namespace fz::filter
