#include "repack_output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "cli.hpp"

namespace h5fz {

namespace {

// The partial file the fatal-signal handler removes: a fixed buffer, as a
// handler may not allocate. Empty when this run holds none.
char g_fatal_partial[4096];
volatile sig_atomic_t g_fatal_armed = 0;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous_fatal[sizeof kFatalSignals / sizeof kFatalSignals[0]];
struct sigaction g_previous_xfsz;

void write_text(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

// A crash inside HDF5 (its error paths after a full disk have crashed, and
// some copies of valid files do) must not leave the partial file behind:
// remove it, say so, then die of the same signal. Only async-signal-safe
// calls here.
void on_fatal_signal(int signal_number) {
  if (g_fatal_armed) {
    g_fatal_armed = 0;
    ::unlink(g_fatal_partial);
    write_text("h5fz repack: crashed (fatal signal); removed the partial output ");
    write_text(g_fatal_partial);
    write_text("\n");
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void arm_fatal_handler(const std::string& partial) {
  std::snprintf(g_fatal_partial, sizeof g_fatal_partial, "%s", partial.c_str());
  g_fatal_armed = partial.size() < sizeof g_fatal_partial;
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i)
    sigaction(kFatalSignals[i], &action, &g_previous_fatal[i]);
  // Past a file size limit (ulimit -f) a write fails with EFBIG instead of
  // killing the process, so HDF5 reports it and the run stops cleanly.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, &g_previous_xfsz);
}

void disarm_fatal_handler() {
  g_fatal_armed = 0;
  for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i)
    sigaction(kFatalSignals[i], &g_previous_fatal[i], nullptr);
  sigaction(SIGXFSZ, &g_previous_xfsz, nullptr);
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void check_repack_target(const std::string& in_path, const std::string& out_path) {
  struct stat in_stat {}, out_stat {};
  const bool out_exists = ::stat(out_path.c_str(), &out_stat) == 0;
  if (out_exists && ::stat(in_path.c_str(), &in_stat) == 0 && in_stat.st_dev == out_stat.st_dev &&
      in_stat.st_ino == out_stat.st_ino) {
    throw UsageError("repack: OUT is IN (the same file); write to another file");
  }
  if (out_exists && S_ISDIR(out_stat.st_mode)) {
    throw UsageError("repack: OUT " + out_path + " is a directory; give a file name");
  }
  if (!out_path.empty() && out_path.back() == '/') throw UsageError("repack: OUT " + out_path + " names a directory");
  const std::string folder = folder_of(out_path);
  struct stat folder_stat {};
  if (::stat(folder.c_str(), &folder_stat) != 0 || !S_ISDIR(folder_stat.st_mode)) {
    throw ToolError("cannot write " + out_path + ": the folder " + folder + " does not exist");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw ToolError("cannot write " + out_path + ": the folder " + folder + " is not writable (" +
                    std::strerror(errno) + ")");
  }
}

PartialOutput::PartialOutput(const std::string& out_path) : out_path_(out_path) {
  std::random_device entropy;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char tag[40];
    std::snprintf(tag, sizeof tag, ".%ld-%08x.h5fz-partial", static_cast<long>(::getpid()),
                  static_cast<unsigned>(entropy()));
    const std::string candidate = out_path + tag;
    // O_EXCL: never an existing file (the input, another run's partial file).
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw ToolError("cannot create " + candidate + ": " + std::strerror(errno));
    }
    struct stat created {};
    ::fstat(fd, &created);
    ::close(fd);
    path_ = candidate;
    device_ = created.st_dev;
    inode_ = created.st_ino;
    owned_ = true;
    arm_fatal_handler(path_);
    return;
  }
  throw ToolError("cannot create a partial file beside " + out_path + ": every name tried exists");
}

PartialOutput::~PartialOutput() {
  remove();
  disarm_fatal_handler();
}

void PartialOutput::remove() {
  if (!owned_) return;
  owned_ = false;
  g_fatal_armed = 0;
  // Only the file this run created: if something else now has the name, it stays.
  struct stat now {};
  if (::lstat(path_.c_str(), &now) == 0 && now.st_dev == device_ && now.st_ino == inode_) ::unlink(path_.c_str());
}

void PartialOutput::commit() {
  if (std::rename(path_.c_str(), out_path_.c_str()) != 0) {
    throw ToolError("cannot rename " + path_ + " to " + out_path_ + ": " + std::strerror(errno));
  }
  owned_ = false;
  g_fatal_armed = 0;
}

void copy_user_block(const std::string& in_path, const std::string& partial, uint64_t size) {
  if (size == 0) return;
  const int in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw ToolError("cannot read the user block of " + in_path + ": " + std::strerror(errno));
  const int out = ::open(partial.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    ::close(in);
    throw ToolError("cannot write the user block of " + partial + ": " + std::strerror(errno));
  }
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 20)));
  std::string failure;
  for (uint64_t at = 0; at < size && failure.empty();) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - at));
    const ssize_t got = ::pread(in, buffer.data(), want, static_cast<off_t>(at));
    if (got <= 0) {
      failure = "cannot read the user block of " + in_path + (got < 0 ? ": " + std::string(std::strerror(errno)) : ": too short");
      break;
    }
    if (::pwrite(out, buffer.data(), static_cast<size_t>(got), static_cast<off_t>(at)) != got) {
      failure = "cannot write the user block of " + partial + ": " + std::strerror(errno);
      break;
    }
    at += static_cast<uint64_t>(got);
  }
  ::close(in);
  if (::close(out) != 0 && failure.empty()) failure = "cannot write " + partial + ": " + std::strerror(errno);
  if (!failure.empty()) throw ToolError(failure);
}

void require_free_space(const std::string& path, uint64_t bytes, const std::string& what) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) return;  // unknown: HDF5's own errors stop the run
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  // HDF5 adds object headers, chunk indexes and free-space records.
  const uint64_t margin = (uint64_t{1} << 16) + bytes / 32;
  if (bytes > free_bytes || free_bytes - bytes < margin) {
    throw ToolError("not enough free space for " + what + ": it needs about " + human_bytes(bytes + margin) +
                    ", the file system of " + path + " has " + human_bytes(free_bytes) + " free");
  }
}

}  // namespace h5fz
