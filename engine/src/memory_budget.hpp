// How much memory this process may still use, so that a chunk too large for
// it gets a clear error or a raw frame instead of the kernel's OOM killer
// (Linux overcommits: a large allocation succeeds and the process is killed
// when it touches the pages).
#pragma once

#include <cstdint>

namespace fz::engine {

// Chunks below this are not checked: reading /proc costs tens of
// microseconds, and no machine that runs HDF5 lacks a few dozen MiB.
constexpr uint64_t kMemoryCheckMinBytes = uint64_t{64} << 20;

// Bytes the process can still take without swapping or being killed: the
// kernel's MemAvailable, capped by its cgroup's limit less its usage (v2
// memory.max / memory.current, v1 limit_in_bytes / usage_in_bytes). 0 when
// none of these can be read (then nothing is refused).
uint64_t available_memory_bytes();
// The memory the process can have at most: MemTotal, capped by its cgroup's limit.
uint64_t total_memory_bytes();

// Throws Error("not enough memory to <what> ...") when `needed` bytes are known
// to exceed what is available (only for chunks of kMemoryCheckMinBytes or more).
void require_memory(uint64_t chunk_bytes, uint64_t needed, const char* what);

}  // namespace fz::engine
