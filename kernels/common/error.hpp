// Errors raised by stage decoders and the engine. Decoders throw FormatError on
// malformed or hostile input; they never read or write out of bounds first.
#pragma once

#include <stdexcept>
#include <string>

namespace fz {

class FormatError : public std::runtime_error {
 public:
  explicit FormatError(const std::string& what) : std::runtime_error(what) {}
};

// A caller asked for something invalid (bad option, unsupported word size).
class UsageError : public std::invalid_argument {
 public:
  explicit UsageError(const std::string& what) : std::invalid_argument(what) {}
};

// An encoder gave up because its output could not be smaller than its input
// (the caller asked it to, with a limit): the chunk is stored as it is.
class NotSmallerError : public std::runtime_error {
 public:
  explicit NotSmallerError(const std::string& what) : std::runtime_error(what) {}
};

// Throws FormatError(message) unless condition holds; for decoder bounds checks.
inline void require_format(bool condition, const char* message) {
  if (!condition) throw FormatError(message);
}

}  // namespace fz
