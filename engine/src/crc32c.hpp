// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and final
// XOR 0xFFFFFFFF), the checksum of FZM frame headers and payloads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fz::engine {

// crc32c("123456789") == 0xE3069283. Pass a previous result as `crc` to continue.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace fz::engine
