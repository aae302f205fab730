#include "buffer_pool.hpp"

#include <algorithm>
#include <vector>

namespace fz::engine {
namespace {

// A pipeline holds at most a handful of streams at once; keep that many.
constexpr size_t kMaxPooledBuffers = 8;
// Do not pin memory for outsized chunks beyond their call.
constexpr size_t kMaxPooledCapacity = size_t(1) << 30;

std::vector<Bytes>& pool() {
  thread_local std::vector<Bytes> buffers;
  return buffers;
}

}  // namespace

Bytes acquire_buffer() {
  auto& buffers = pool();
  if (buffers.empty()) return Bytes();
  // Largest first: it fits the most.
  auto largest = std::max_element(buffers.begin(), buffers.end(),
                                  [](const Bytes& a, const Bytes& b) { return a.capacity() < b.capacity(); });
  Bytes b = std::move(*largest);
  buffers.erase(largest);
#ifdef FZ_POISON_REUSED_BUFFERS
  std::fill(b.begin(), b.end(), uint8_t{0xA5});
#endif
  return b;
}

void release_buffer(Bytes&& buffer) {
  if (buffer.capacity() == 0 || buffer.capacity() > kMaxPooledCapacity) return;
  auto& buffers = pool();
  if (buffers.size() < kMaxPooledBuffers) buffers.push_back(std::move(buffer));
}

}  // namespace fz::engine
