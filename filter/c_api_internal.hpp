// What the plugin's C interfaces (reader_api.cpp, writer_api.cpp) share:
// nothing throws across them; each function returns 0, or -1 with a message
// (always NUL-terminated, cut to its capacity) in the caller's buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace fz::filter::c_api {

inline void copy_text(char* out, size_t capacity, const std::string& text) {
  if (out != nullptr && capacity > 0) {
    const size_t n = std::min(capacity - 1, text.size());
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
  }
}

inline int fail(char* error, size_t capacity, const std::string& message) {
  copy_text(error, capacity, message);
  return -1;
}

// Runs body; an exception becomes -1 and its message.
template <typename Body>
int guarded(char* error, size_t capacity, Body body) noexcept {
  try {
    body();
    return 0;
  } catch (const std::bad_alloc&) {
    return fail(error, capacity, "out of memory");
  } catch (const std::exception& e) {
    return fail(error, capacity, e.what());
  } catch (...) {
    return fail(error, capacity, "unknown failure");
  }
}

}  // namespace fz::filter::c_api
