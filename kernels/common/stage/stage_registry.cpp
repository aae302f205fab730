// From stored (type id, config) back to a stage. The names and the parse
// switch are generated from stage_list.inc; an id this build does not know
// means the frame came from a newer version.
#include <string>

#include "common/error.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

std::string stage_type_name(uint16_t type_id) {
  switch (type_id) {
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) \
  case id: return #name;
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
  }
  return "unknown-" + std::to_string(type_id);
}

std::unique_ptr<Stage> parse_stage(uint16_t type_id, ByteSpan config) {
  switch (type_id) {
#define FZ_STAGE(id, Enum, name, parse, samples, gpu) \
  case id: return parse(config);
#include "common/stage/stage_list.inc"
#undef FZ_STAGE
  }
  throw FormatError("unknown stage type " + std::to_string(type_id) +
                    ": the frame was written by a newer version of H5Z-FZ");
}

std::unique_ptr<Stage> config_error_as_format_error(const char* stage,
                                                    const std::function<std::unique_ptr<Stage>()>& make) {
  try {
    return make();
  } catch (const UsageError& e) {
    throw FormatError(std::string("invalid ") + stage + " stage config: " + e.what());
  }
}

std::unique_ptr<Stage> parse_single_byte_config(ByteSpan config, const char* stage,
                                                std::unique_ptr<Stage> (*make)(unsigned)) {
  if (config.size != 1) throw FormatError(std::string(stage) + " stage: config must be 1 byte");
  const unsigned value = config.data[0];
  return config_error_as_format_error(stage, [&] { return make(value); });
}

}  // namespace fz::stage
