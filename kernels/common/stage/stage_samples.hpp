// What the stage contract test (tests/engine/stage_contract_test.cpp) runs
// each listed stage with. Every line of stage_list.inc names a samples
// function, defined beside the stage's parser in kernels/<stage>/<stage>_stage.cpp,
// so a new stage is tested by being listed (docs/ADDING_A_STAGE.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

// A stage and inputs whose forward its inverse undoes exactly.
struct StageCase {
  std::unique_ptr<Stage> stage;
  std::vector<Bytes> inputs;  // one per input port
};

// One configuration of a stage. `make` shapes arbitrary bytes (empty, a few,
// a ragged length, a slice of a real field) into inputs the stage accepts,
// e.g. whole elements, symbols inside the alphabet, values a lossy stage
// reproduces exactly, and builds the stage for them (a predictor's shape
// follows the input's length).
struct StageSample {
  std::string label;
  std::function<StageCase(ByteSpan raw)> make;
};

#define FZ_STAGE(id, Enum, name, parse, samples, gpu) std::vector<StageSample> samples();
#include "common/stage/stage_list.inc"
#undef FZ_STAGE

// A line of stage_list.inc, for tests that go through every stage.
struct ListedStage {
  uint16_t id;
  const char* name;
  bool has_cuda_part;
  std::vector<StageSample> (*samples)();
};
const std::vector<ListedStage>& listed_stages();

// Shaping helpers for samples.
// raw cut down to whole words of `width` bytes.
Bytes whole_words(ByteSpan raw, unsigned width);
// raw's whole words of `width` (4 or 8) bytes as floats of that width holding
// integers (each word's top 16 bits, signed: a smooth field stays smooth),
// which a lossy stage with an absolute bound of 0.5 (step 1) reproduces exactly.
Bytes exact_floats(ByteSpan raw, unsigned width);
// raw's whole u16 words reduced below `alphabet`: Huffman symbols.
Bytes u16_symbols(ByteSpan raw, uint32_t alphabet);

}  // namespace fz::stage
