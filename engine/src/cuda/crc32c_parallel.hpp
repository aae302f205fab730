// How the GPU computes a CRC32C in parallel (cuda/crc32c_cuda.cu), as plain
// functions that the CUDA kernels and a CPU test (tests/engine/
// crc32c_parallel_test.cpp) share, so that the split of the work is checked
// against crc32c() on machines without a GPU too.
//
// The CRC register is linear over GF(2). Write raw(M) for the register after
// message M when it starts at 0 (no initial value, no final XOR). Then
//   raw(A || B) = raw(A) * x^(8|B|) mod P  XOR  raw(B),
// and appending n zero bytes multiplies the register by x^(8n) mod P. So a
// message is cut into pieces, each piece's raw CRC is computed independently
// and moved to the end of the message by one GF(2) multiplication, and the
// moved values XOR together: no order between pieces matters but their
// distance to the end, which is why the sum is exact and deterministic.
//
// The work: the concatenated spans are cut into tiles (one per thread block)
// that never cross a span; a span whose start is not 16-byte aligned gives its
// first (16 - address % 16) bytes a tile of their own so that every other tile
// starts aligned. Within a tile, lane t of kLanes reads the 16 bytes at
// t*16 + row*kRowBytes of every whole row (a warp reads 512 contiguous bytes),
// and keeps its own register over "its pieces with the other lanes' bytes
// replaced by zeros": register = register * x^(8*kRowBytes) ^ raw(piece), the
// multiplication done by four byte tables. The bytes after the last whole row
// (fewer than kRowBytes) go 16 per lane, byte by byte. Each lane then moves its
// register to the tile's end, the block XORs the lanes, and one thread moves
// the tile's value to the end of the whole message.
//
// Polynomials are in the reflected form of the CRC register: bit 31 holds the
// coefficient of x^0, bit 0 that of x^31.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.hpp"

namespace fz::engine::crc32c_parallel {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial
constexpr uint32_t kOne = 0x80000000u;         // the polynomial 1 (x^0)

constexpr unsigned kLanes = 256;      // threads per tile (block)
constexpr unsigned kLaneBytes = 16;   // one 16-byte load per lane and row
constexpr unsigned kRowBytes = kLanes * kLaneBytes;
constexpr unsigned kAlignment = kLaneBytes;  // rows are read with aligned 16-byte loads
constexpr unsigned kMinTileBytes = 8 * kRowBytes;
constexpr unsigned kMaxTileBytes = 64 * kRowBytes;

// a * b mod P. Each step adds b * x^i for the coefficient x^i of a, then
// multiplies b by x (a right shift in reflected form; x^32 wraps to P's rest).
FZ_HOST_DEVICE constexpr uint32_t gf2_multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int i = 0; i < 32; ++i) {
    product ^= b & (0u - ((a >> (31 - i)) & 1u));
    b = (b >> 1) ^ (kPolynomial & (0u - (b & 1u)));
  }
  return product;
}

// The precomputed multipliers. 28 KiB; `bytes` and `row_shift` are what the
// hot loop reads (copied into shared memory per block), `zero_power` serves the
// few moves per lane and tile.
struct alignas(16) Tables {
  // bytes[k][v]: the register after byte v then k zero bytes, from 0; a 16-byte
  // piece b0..b15 has raw = XOR of bytes[15 - i][b_i].
  uint32_t bytes[16][256];
  // row_shift[j][v]: (v << 8j) * x^(8*kRowBytes): the register moved one row on.
  uint32_t row_shift[4][256];
  // zero_power[k][v]: x^(8 * v * 256^k): moving by n bytes multiplies by the
  // entries of n's nonzero bytes.
  uint32_t zero_power[8][256];
};

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t v = 0; v < 256; ++v) {
    uint32_t c = v;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPolynomial & (0u - (c & 1u)));
    t.bytes[0][v] = c;
  }
  for (int k = 1; k < 16; ++k)
    for (uint32_t v = 0; v < 256; ++v)
      t.bytes[k][v] = (t.bytes[k - 1][v] >> 8) ^ t.bytes[0][t.bytes[k - 1][v] & 0xFFu];
  // x^(8v): one more zero byte each, through the byte table.
  t.zero_power[0][0] = kOne;
  for (uint32_t v = 1; v < 256; ++v) {
    const uint32_t p = t.zero_power[0][v - 1];
    t.zero_power[0][v] = (p >> 8) ^ t.bytes[0][p & 0xFFu];
  }
  for (int k = 1; k < 8; ++k) {
    const uint32_t step = gf2_multiply(t.zero_power[k - 1][255], t.zero_power[k - 1][1]);  // x^(8 * 256^k)
    t.zero_power[k][0] = kOne;
    for (uint32_t v = 1; v < 256; ++v) t.zero_power[k][v] = gf2_multiply(t.zero_power[k][v - 1], step);
  }
  // kRowBytes = 4096 = 16 * 256: x^(8 * 4096) is zero_power[1][16].
  const uint32_t row = t.zero_power[1][kRowBytes / 256];
  for (int j = 0; j < 4; ++j)
    for (uint32_t v = 0; v < 256; ++v) t.row_shift[j][v] = gf2_multiply(v << (8 * j), row);
  return t;
}

// register * x^(8n): the register followed by n zero bytes.
FZ_HOST_DEVICE inline uint32_t append_zeros(uint32_t value, uint64_t n, const uint32_t (*zero_power)[256]) {
  for (int k = 0; n != 0; ++k, n >>= 8)
    if (n & 0xFFu) value = gf2_multiply(value, zero_power[k][n & 0xFFu]);
  return value;
}

FZ_HOST_DEVICE inline uint32_t raw_bytewise(const uint8_t* p, size_t n, const uint32_t* byte_table) {
  uint32_t c = 0;
  for (size_t i = 0; i < n; ++i) c = (c >> 8) ^ byte_table[(c ^ p[i]) & 0xFFu];
  return c;
}

// The raw CRC of a 16-byte piece given as four little-endian words.
FZ_HOST_DEVICE inline uint32_t raw_piece(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3,
                                         const uint32_t (*bytes)[256]) {
  return bytes[15][w0 & 0xFFu] ^ bytes[14][(w0 >> 8) & 0xFFu] ^ bytes[13][(w0 >> 16) & 0xFFu] ^ bytes[12][w0 >> 24] ^
         bytes[11][w1 & 0xFFu] ^ bytes[10][(w1 >> 8) & 0xFFu] ^ bytes[9][(w1 >> 16) & 0xFFu] ^ bytes[8][w1 >> 24] ^
         bytes[7][w2 & 0xFFu] ^ bytes[6][(w2 >> 8) & 0xFFu] ^ bytes[5][(w2 >> 16) & 0xFFu] ^ bytes[4][w2 >> 24] ^
         bytes[3][w3 & 0xFFu] ^ bytes[2][(w3 >> 8) & 0xFFu] ^ bytes[1][(w3 >> 16) & 0xFFu] ^ bytes[0][w3 >> 24];
}

FZ_HOST_DEVICE inline uint32_t shift_one_row(uint32_t value, const uint32_t (*row_shift)[256]) {
  return row_shift[0][value & 0xFFu] ^ row_shift[1][(value >> 8) & 0xFFu] ^ row_shift[2][(value >> 16) & 0xFFu] ^
         row_shift[3][value >> 24];
}

// ---- tiles ------------------------------------------------------------------

// Tile length for a message of `total` bytes: enough tiles to fill a large GPU
// (about 512), each at least 8 rows (so that copying the tables into shared
// memory stays small next to the work) and at most 64 rows.
inline uint32_t tile_bytes_for(uint64_t total) {
  uint64_t t = (total / 512 + kRowBytes - 1) / kRowBytes * kRowBytes;
  if (t < kMinTileBytes) t = kMinTileBytes;
  if (t > kMaxTileBytes) t = kMaxTileBytes;
  return static_cast<uint32_t>(t);
}

// A bound on total / tile_bytes_for(total) that never falls as the total
// grows: 512 while tiles are at most 32 KiB or sized total / 512, then total /
// 256 KiB.
inline uint64_t max_whole_tiles(uint64_t total) {
  const uint64_t by_largest_tile = total / kMaxTileBytes;
  return by_largest_tile > 512 ? by_largest_tile : 512;
}

// Bytes before a span's first aligned address, which get a tile of their own.
FZ_HOST_DEVICE inline uint32_t head_bytes(uintptr_t address, uint64_t size) {
  const uint64_t to_aligned = (kAlignment - address % kAlignment) % kAlignment;
  return static_cast<uint32_t>(to_aligned < size ? to_aligned : size);
}

FZ_HOST_DEVICE inline uint64_t tile_count(uint64_t size, uint32_t head, uint32_t tile_bytes) {
  return (head > 0 ? 1 : 0) + (size - head + tile_bytes - 1) / tile_bytes;
}

// Tile `index` of a span: its first byte (offset in the span) and length.
FZ_HOST_DEVICE inline void tile_range(uint64_t size, uint32_t head, uint32_t tile_bytes, uint64_t index,
                                      uint64_t* begin, uint32_t* length) {
  if (head > 0) {
    if (index == 0) {
      *begin = 0;
      *length = head;
      return;
    }
    --index;
  }
  *begin = head + index * tile_bytes;
  const uint64_t left = size - *begin;
  *length = static_cast<uint32_t>(left < tile_bytes ? left : tile_bytes);
}

// Lane `lane`'s share of a tile's raw CRC, already moved to the tile's end. The
// tile starts 16-byte aligned whenever it holds a whole row. `load` reads the
// 16 bytes at a pointer into four little-endian words (a vector load on the
// GPU).
template <typename Load16>
FZ_HOST_DEVICE inline uint32_t lane_share(const uint8_t* tile, uint32_t length, unsigned lane,
                                          const uint32_t (*bytes)[256], const uint32_t (*row_shift)[256],
                                          const uint32_t (*zero_power)[256], Load16 load) {
  const uint32_t rows = length / kRowBytes;
  const uint32_t rest = length - rows * kRowBytes;
  uint32_t share = 0;
  if (rows > 0) {
    const uint8_t* p = tile + lane * kLaneBytes;
    uint32_t state = 0;
    uint32_t row = 0;
    // Four rows' loads in flight before their table lookups.
    for (; row + 4 <= rows; row += 4) {
      uint32_t w[4][4];
      for (int j = 0; j < 4; ++j) load(p + static_cast<size_t>(row + j) * kRowBytes, w[j]);
      for (int j = 0; j < 4; ++j)
        state = shift_one_row(state, row_shift) ^ raw_piece(w[j][0], w[j][1], w[j][2], w[j][3], bytes);
    }
    for (; row < rows; ++row) {
      uint32_t w[4];
      load(p + static_cast<size_t>(row) * kRowBytes, w);
      state = shift_one_row(state, row_shift) ^ raw_piece(w[0], w[1], w[2], w[3], bytes);
    }
    // After this lane's last piece come the later lanes' pieces of the last
    // row, then the rest.
    share = append_zeros(state, (kLanes - 1 - lane) * kLaneBytes + rest, zero_power);
  }
  const uint32_t first = lane * kLaneBytes;
  if (first < rest) {
    const uint32_t end = first + kLaneBytes < rest ? first + kLaneBytes : rest;
    const uint32_t raw = raw_bytewise(tile + static_cast<size_t>(rows) * kRowBytes + first, end - first, bytes[0]);
    share ^= append_zeros(raw, rest - end, zero_power);
  }
  return share;
}

// The final CRC32C from the XOR of every tile's value (each moved to the end
// of the message), for `total` bytes continuing `crc` (as crc32c() does).
FZ_HOST_DEVICE inline uint32_t finish(uint32_t tiles_xor, uint64_t total, uint32_t crc,
                                      const uint32_t (*zero_power)[256]) {
  return ~(append_zeros(~crc, total, zero_power) ^ tiles_xor);
}

}  // namespace fz::engine::crc32c_parallel
