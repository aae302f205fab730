// The list of stages for tests, and the helpers stages' samples shape their
// inputs with (stage_samples.hpp).
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

const std::vector<ListedStage>& listed_stages() {
#define FZ_STAGE_HAS_CUDA_CUDA true
#define FZ_STAGE_HAS_CUDA_CPU_ONLY false
  static const std::vector<ListedStage> stages = {
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) {id, #name, FZ_STAGE_HAS_CUDA_##gpu, samples},
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
  };
#undef FZ_STAGE_HAS_CUDA_CUDA
#undef FZ_STAGE_HAS_CUDA_CPU_ONLY
  return stages;
}

Bytes whole_words(ByteSpan raw, unsigned width) { return Bytes(raw.data, raw.data + raw.size / width * width); }

Bytes exact_floats(ByteSpan raw, unsigned width) {
  Bytes out;
  for (size_t i = 0; i + width <= raw.size; i += width) {
    // The word's top 16 bits as a signed integer: a smooth field stays smooth.
    const double integer = static_cast<int16_t>(load_le<uint16_t>(raw.data + i + width - 2));
    if (width == 4) append_le<float>(out, static_cast<float>(integer));
    else append_le<double>(out, integer);
  }
  return out;
}

Bytes u16_symbols(ByteSpan raw, uint32_t alphabet) {
  Bytes out;
  for (size_t i = 0; i + 2 <= raw.size; i += 2)
    append_le<uint16_t>(out, static_cast<uint16_t>(load_le<uint16_t>(raw.data + i) % alphabet));
  return out;
}

}  // namespace fz::stage
