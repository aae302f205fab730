// From stored (type id, config) back to a stage. One entry per stage type; an id
// this build does not know means the frame came from a newer version.
#include <string>

#include "common/error.hpp"
#include "stage.hpp"

namespace fz::engine {
namespace {

unsigned single_byte_config(ByteSpan config, const char* stage) {
  if (config.size != 1) throw FormatError(std::string(stage) + " stage: config must be 1 byte");
  return config.data[0];
}

template <typename Make>
std::unique_ptr<Stage> build(Make make, unsigned arg, const char* stage) {
  try {
    return make(arg);
  } catch (const UsageError& e) {
    throw FormatError(std::string("invalid ") + stage + " stage config: " + e.what());
  }
}

}  // namespace

std::string stage_type_name(uint16_t type_id) {
  switch (static_cast<StageType>(type_id)) {
    case StageType::BitShuffle: return "bitshuffle";
    case StageType::Rze: return "rze";
    case StageType::Rre: return "rre";
    case StageType::Tcms: return "tcms";
    case StageType::DiffNb: return "diffnb";
    case StageType::Merge: return "merge";
    case StageType::ByteSwap: return "byteswap";
    case StageType::ByteTranspose: return "bytetranspose";
    case StageType::Quantize: return "quantize";
    case StageType::Lorenzo: return "lorenzo";
    case StageType::Huffman: return "huffman";
    case StageType::FillMask: return "fillmask";
  }
  return "unknown-" + std::to_string(type_id);
}

std::unique_ptr<Stage> parse_stage(uint16_t type_id, ByteSpan config) {
  const std::string name = stage_type_name(type_id);
  const char* n = name.c_str();
  switch (static_cast<StageType>(type_id)) {
    case StageType::BitShuffle: return build(make_bitshuffle, single_byte_config(config, n), n);
    case StageType::Rze: return build(make_rze, single_byte_config(config, n), n);
    case StageType::Rre: return build(make_rre, single_byte_config(config, n), n);
    case StageType::Tcms: return build(make_tcms, single_byte_config(config, n), n);
    case StageType::DiffNb: return build(make_diffnb, single_byte_config(config, n), n);
    case StageType::Merge: return build(make_merge, single_byte_config(config, n), n);
    case StageType::ByteSwap: return build(make_byteswap, single_byte_config(config, n), n);
    case StageType::ByteTranspose:
      if (config.size != 4) throw FormatError("bytetranspose stage: config must be 4 bytes");
      return build(make_bytetranspose, load_le<uint32_t>(config.data), n);
    case StageType::Huffman: return parse_huffman(config);
    case StageType::Quantize: return parse_quantize(config);
    case StageType::Lorenzo: return parse_lorenzo(config);
    case StageType::FillMask: return parse_fillmask(config);
  }
  throw FormatError("unknown stage type " + std::to_string(type_id) +
                    ": the frame was written by a newer version of H5Z-FZ");
}

}  // namespace fz::engine
