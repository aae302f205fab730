#include "environment.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace fz::filter {
namespace {

const char* value_of(const char* name) {
  const char* value = std::getenv(name);
  return value && value[0] != '\0' ? value : nullptr;
}

void say(const std::string& message) { std::fprintf(stderr, "H5Z-FZ: %s\n", message.c_str()); }

// The launchers' names for a process's rank among those on its host, in the
// order they are trusted: Open MPI, MVAPICH, MPICH's Hydra, Cray PALS, Slurm.
constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
                                               "MPI_LOCALRANKID", "PALS_LOCAL_RANKID", "SLURM_LOCALID"};

struct LocalRank {
  long rank = -1;  // -1: none set
  const char* variable = nullptr;
};

LocalRank local_rank(const std::function<const char*(const char*)>& lookup) {
  for (const char* name : kLocalRankVariables) {
    const char* value = lookup(name);
    if (value == nullptr || value[0] == '\0') continue;
    char* end = nullptr;
    const long parsed = std::strtol(value, &end, 10);
    if (end != value && *end == '\0' && parsed >= 0 && parsed < (1L << 20)) return {parsed, name};
  }
  return {};
}

// Made once per process, as the rest of the policy: what the filter uses and
// what h5z_fz_device_in_use reports are the same choice.
const DeviceChoice& choice_from_environment() {
  static const DeviceChoice choice =
      choose_device(value_of("H5Z_FZ_DEVICE"), [](const char* name) { return value_of(name); },
                    [] { return usable_cuda_devices(); });
  return choice;
}

Options read_environment() {
  Options policy;
  const bool verbose = verbose_environment();
  policy.log = [verbose](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning || verbose) say(message);
  };
  const DeviceChoice& device = choice_from_environment();
  policy.device = device.device;
  if (verbose && !device.reason.empty()) say("device " + device.device + ": " + device.reason);
  if (const char* threads = value_of("H5Z_FZ_THREADS")) {
    char* end = nullptr;
    const unsigned long parsed = std::strtoul(threads, &end, 10);
    if (end == threads || *end != '\0' || parsed > 4096) {
      if (verbose) say(std::string("ignoring H5Z_FZ_THREADS=") + threads + " (not a thread count)");
    } else {
      policy.threads = static_cast<unsigned>(parsed);
    }
  }
  if (const char* cpu = value_of("H5Z_FZ_CPU")) {
    if (std::strcmp(cpu, "baseline") == 0)
      policy.cpu_features = CpuFeatures::kBaseline;
    else if (verbose)
      say(std::string("ignoring H5Z_FZ_CPU=") + cpu + " (only 'baseline' is known)");
  }
  if (const char* copies = value_of("H5Z_FZ_GPU_COPY")) {
    if (std::strcmp(copies, "direct") == 0)
      policy.gpu_copies = GpuCopies::kDirect;
    else if (std::strcmp(copies, "staged") != 0 && verbose)
      say(std::string("ignoring H5Z_FZ_GPU_COPY=") + copies + " (not staged or direct)");
  }
  return policy;
}

}  // namespace

DeviceChoice choose_device(const char* wanted, const std::function<const char*(const char*)>& lookup,
                           const std::function<int()>& device_count) {
  const std::string asked = wanted != nullptr && wanted[0] != '\0' ? wanted : "auto";
  const bool local = asked == "cuda:local" || asked == "auto:local";
  if (!local && asked != "auto") return {asked, ""};  // cpu, cuda, cuda:N, auto:N, or a string the engine refuses
  const std::string kind = asked.substr(0, 4);       // "cuda" or "auto"
  const LocalRank rank = local_rank(lookup);
  if (rank.rank < 0) {
    if (!local) return {"auto", ""};
    return {kind, "no local rank is set (none of OMPI_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_RANK, "
                  "MPI_LOCALRANKID, PALS_LOCAL_RANKID, SLURM_LOCALID): device 0"};
  }
  const int devices = device_count();
  const std::string of = "local rank " + std::to_string(rank.rank) + " (" + rank.variable + ") of " +
                         std::to_string(devices) + " CUDA device(s)";
  if (devices <= 0) return {kind, local ? of + ": no device to choose" : ""};
  if (devices == 1 && !local) return {"auto", ""};  // one device: every rank shares it, as auto does
  return {kind + ":" + std::to_string(rank.rank % devices), of};
}

std::string device_in_use() {
  const DeviceChoice& choice = choice_from_environment();
  std::string words = choice.device;
  if (!choice.reason.empty()) words += " (" + choice.reason + ")";
  if (choice.device == "cpu") return words;
  const int devices = usable_cuda_devices();
  words += devices == 0 ? std::string("; no usable CUDA device: the CPU")
                        : "; " + std::to_string(devices) + " CUDA device(s) visible";
  return words;
}

bool verbose_environment() {
  static const bool enabled = [] {
    const char* value = std::getenv("H5Z_FZ_VERBOSE");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

const char* mpi_launcher_variable() {
  static const char* const variable = local_rank([](const char* name) { return value_of(name); }).variable;
  return variable;
}

FrameBufferChoice choose_frame_buffers(const char* wanted, const char* launcher) {
  FrameBufferChoice choice;
  const std::string asked = wanted != nullptr ? wanted : "auto";
  if (asked == "own") {
    choice.own = true;
    choice.reason = "H5Z_FZ_FRAME_BUFFERS=own";
  } else if (asked == "in-place") {
    choice.own = false;
  } else {
    if (asked != "auto") choice.ignored = "ignoring H5Z_FZ_FRAME_BUFFERS=" + asked + " (not auto, own or in-place)";
    choice.own = launcher != nullptr;
    if (choice.own) choice.reason = std::string("a rank of a parallel job (") + launcher + ")";
  }
  return choice;
}

const FrameBufferChoice& frame_buffers_from_environment() {
  static const FrameBufferChoice choice = [] {
    FrameBufferChoice c = choose_frame_buffers(value_of("H5Z_FZ_FRAME_BUFFERS"), mpi_launcher_variable());
    if (!c.ignored.empty() && verbose_environment()) say(c.ignored);
    return c;
  }();
  return choice;
}

bool hand_back_frame_sized(size_t frame_bytes, size_t buffer_bytes, bool own_buffers) {
  return own_buffers && frame_bytes > 0 && frame_bytes <= buffer_bytes / 2;
}

const Options& policy_from_environment() {
  static const Options policy = read_environment();
  return policy;
}

void apply_policy(const Options& policy, Options& options) {
  options.threads = policy.threads;
  options.device = policy.device;
  options.cpu_features = policy.cpu_features;
  options.gpu_copies = policy.gpu_copies;
  options.log = policy.log;
}

}  // namespace fz::filter
