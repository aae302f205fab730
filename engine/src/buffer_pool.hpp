// Reuses stream buffers across chunks on the same thread. Stage outputs are
// megabytes each; allocating them fresh per chunk made the kernel map and fault
// in new pages every time (glibc serves large blocks with mmap), which cost more
// than the stages themselves (perf: 18% in page faults, docs/PERFORMANCE.md).
#pragma once

#include "common/bytes.hpp"

namespace fz::engine {

// An empty buffer, with the capacity of one released earlier on this thread if any.
Bytes acquire_buffer();
// Gives a buffer back for reuse on this thread (kept only while the pool is small).
void release_buffer(Bytes&& buffer);

}  // namespace fz::engine
