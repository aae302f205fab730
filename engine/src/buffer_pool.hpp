// Reuses stream buffers across chunks on the same thread. Stage outputs are
// megabytes each; allocating them fresh per chunk made the kernel map and fault
// in new pages every time (glibc serves large blocks with mmap), which cost more
// than the stages themselves (perf: 18% in page faults, docs/PERFORMANCE.md).
#pragma once

#include "common/bytes.hpp"

namespace fz::engine {

// A buffer released earlier on this thread (the largest), or an empty one. It
// keeps its old size and stale bytes: a stage that sizes its output with
// resize() and then writes every byte pays no memset for the bytes it
// overwrites anyway (zeroing a megabyte stream cost 8-16% of a lossy decode).
// So every stage must clear() or assign() before appending, and must write
// every byte it resizes to. Sanitizer builds fill the stale bytes with 0xA5,
// so a stage that relies on zeroed memory changes its pinned bytes there.
Bytes acquire_buffer();
// Gives a buffer back for reuse on this thread (kept only while the pool is small).
void release_buffer(Bytes&& buffer);

}  // namespace fz::engine
