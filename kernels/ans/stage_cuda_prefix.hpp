// The decode plan of an ANS stream on the GPU path, shared by the two ANS
// stages' GPU parts (ans_stage_cuda.cpp, interleaved_stage_cuda.cpp): both
// parse the stream's head on the host, from the frame's own bytes when it has
// them, else from a prefix read back from the device whose length the parser
// asks for (plan.needed). Host-only; compiled only in CUDA builds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "common/stage/stage.hpp"

namespace fz::stage {

// parse(bytes, size) -> Plan parses the first `size` bytes of the stream;
// a prefix is read `first_bytes` long, then again up to `extra_reads` times
// while the plan still asks for more; after that, throws `too_many`.
template <class Parse>
auto plan_from_stream_head(const DeviceBuffer& stream, DeviceWork& work, size_t first_bytes, int extra_reads,
                           const char* too_many, Parse parse) {
  if (stream.host) return parse(stream.host, stream.size);
  std::vector<uint8_t> prefix;
  const auto read = [&](size_t bytes) {
    prefix.resize(bytes);
    if (bytes > 0) work.read_back(stream.data, bytes, prefix.data());
    return parse(static_cast<const uint8_t*>(prefix.data()), bytes);
  };
  auto plan = read(std::min(stream.size, first_bytes));
  for (int again = 0; again < extra_reads && plan.needed != 0; ++again) plan = read(plan.needed);
  if (plan.needed != 0) throw std::logic_error(too_many);
  return plan;
}

}  // namespace fz::stage
