// What the plugin's three source files share (plugin.cpp: the entry points
// HDF5 calls; set_local.cpp: can_apply and set_local; chunk_filter.cpp: the
// filter callback on one chunk). Internal to the plugin module.
#pragma once

#include <hdf5.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "cd_values.hpp"
#include "environment.hpp"
#include "fz/fz.hpp"
#include "hdf5_binding.hpp"

namespace fz::filter {

using Problem = Hdf5Api::Problem;

// A failure that an entry point reports and turns into its error return.
struct Refusal {
  Problem problem;
  std::string message;
};

// HDF5 chunks are limited to 4 GiB - 1 bytes; a frame claiming more is hostile
// and must not make the filter allocate it.
constexpr uint64_t kMaxChunkBytes = 0xFFFFFFFFull;

// Enough for any stored layout, and for noticing a user layout that is too long.
constexpr size_t kCdCapacity = 256;

inline bool verbose() { return verbose_environment(); }

// Prints a message the first time a given kind of decision is made.
inline void say_once(std::atomic<bool>& said, const std::string& message) {
  if (!verbose() || said.exchange(true)) return;
  std::fprintf(stderr, "H5Z-FZ: %s\n", message.c_str());
}
// The same, with the message made only when it is said: the chunk callbacks
// say things once per process, and building the text on every chunk (a
// dataset description with its bound printed) cost a small chunk ~1 us.
template <typename MakeMessage, typename = std::enable_if_t<std::is_invocable_r_v<std::string, MakeMessage>>>
void say_once(std::atomic<bool>& said, MakeMessage make) {
  if (!verbose() || said.exchange(true)) return;
  std::fprintf(stderr, "H5Z-FZ: %s\n", make().c_str());
}

inline std::string hdf5_failure(const char* function) { return std::string(function) + " failed"; }

// Rethrows the exception being handled as a Refusal of `problem` (a Refusal
// as it is), so that the entry point reports it.
[[noreturn]] void rethrow_as_refusal(Problem problem);

// The bytes one chunk of the dataset holds (element size x chunk dims), or
// nothing when the product does not fit 64 bits (no real chunk does).
std::optional<uint64_t> chunk_bytes(const DatasetInfo& dataset);

// The callbacks, behind the entry points of plugin.cpp.
htri_t can_apply(const Hdf5Api& api, hid_t dcpl, hid_t type, hid_t space);
herr_t set_local(const Hdf5Api& api, hid_t dcpl, hid_t type, hid_t space);
size_t compress_chunk(const Hdf5Api& api, size_t cd_count, const unsigned cd[], size_t nbytes, size_t* buf_size,
                      void** buf);
size_t decompress_chunk(const Hdf5Api& api, size_t cd_count, const unsigned cd[], size_t nbytes, size_t* buf_size,
                        void** buf);

}  // namespace fz::filter
