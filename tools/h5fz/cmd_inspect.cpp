// h5fz inspect: tells an FZM frame from an HDF5 file and prints its structure.
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cli.hpp"

namespace h5fz {

namespace {

const char* const kHelp =
    "usage: h5fz inspect [--chunks] file\n"
    "\n"
    "FZM frame (starts with \"FZM\\0\"): prints version, flags, preset, dtype, shape,\n"
    "sizes, every stage (type id, name, config bytes, inputs/outputs), the stored\n"
    "buffer sizes and the CRC32C checksums (which are verified).\n"
    "\n"
    "HDF5 file: prints every dataset's path, dtype, shape, chunk shape, filters with\n"
    "their cd_values (decoded for H5Z-FZ, id 32850), stored and raw bytes and ratio.\n"
    "The H5Z-FZ plugin is not needed.\n"
    "\n"
    "  --chunks   also read each dataset's first chunk as stored (H5Dread_chunk) and\n"
    "             print its FZM frame\n";

const uint8_t kFrameMagic[4] = {'F', 'Z', 'M', 0};

bool starts_with_frame_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ToolError("cannot open '" + path + "': " + std::strerror(errno));
  uint8_t head[4] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  return in.gcount() == sizeof head && std::memcmp(head, kFrameMagic, sizeof head) == 0;
}

}  // namespace

void print_frame_info(const fz::FrameInfo& info, const std::string& indent) {
  const char* in = indent.c_str();
  std::printf("%sformat version   %u.%u\n", in, info.version_major, info.version_minor);
  std::printf("%sflags            0x%04x%s\n", in, info.flags, info.raw ? " (raw: payload is the original bytes)" : "");
  std::printf("%spreset           %u (%s)\n", in, static_cast<unsigned>(info.preset), fz::preset_name(info.preset));
  std::printf("%sdtype            %s\n", in, dtype_name(info.dtype).c_str());
  std::printf("%sshape            %s\n", in, shape_text(info.dims).c_str());
  std::printf("%soriginal bytes   %llu\n", in, static_cast<unsigned long long>(info.original_bytes));
  std::printf("%sheader bytes     %zu\n", in, info.header_bytes);
  std::printf("%sframe bytes      %zu (ratio %.3f)\n", in, info.frame_bytes,
              info.frame_bytes ? static_cast<double>(info.original_bytes) / info.frame_bytes : 0.0);
  std::printf("%sheader crc32c    0x%08x\n", in, info.header_crc);
  std::printf("%spayload crc32c   0x%08x\n", in, info.payload_crc);
  std::printf("%sstages           %zu\n", in, info.stages.size());
  for (size_t i = 0; i < info.stages.size(); ++i) {
    const fz::StageInfo& s = info.stages[i];
    std::string inputs;
    for (size_t k = 0; k < s.inputs.size(); ++k) inputs += (k ? "," : "") + std::to_string(s.inputs[k]);
    std::printf("%s  [%zu] type %u %-12s inputs [%s] outputs %u config %s\n", in, i, s.type_id,
                s.name.c_str(), inputs.c_str(), s.outputs, hex_bytes(s.config).c_str());
  }
  uint64_t payload = 0;
  std::printf("%sstored buffers   %zu:", in, info.stored_sizes.size());
  for (uint64_t size : info.stored_sizes) {
    std::printf(" %llu", static_cast<unsigned long long>(size));
    payload += size;
  }
  std::printf(" (total %llu bytes)\n", static_cast<unsigned long long>(payload));
}

int inspect_frame_file(const std::string& path, const fz::Bytes& bytes) {
  fz::FrameInfo info = fz::inspect(bytes.data(), bytes.size());
  std::printf("%s: FZM frame, %zu bytes, checksums verified\n", path.c_str(), bytes.size());
  print_frame_info(info, "  ");
  return 0;
}

int run_inspect(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  ParsedArgs parsed = parse_args(args, {}, {"--chunks"});
  if (parsed.positional.size() != 1) throw UsageError("inspect needs exactly one file");
  const std::string& path = parsed.positional[0];
  if (starts_with_frame_magic(path)) {
    if (parsed.has("--chunks")) throw UsageError("--chunks applies to HDF5 files, not to a single frame");
    return inspect_frame_file(path, read_whole_file(path));
  }
  return inspect_hdf5_file(path, parsed.has("--chunks"));
}

}  // namespace h5fz
