// QUANTIZE: error-bounded direct quantizer (stage type 9), float32 and float64.
//
// PFPL-style: every element is quantized on its own (no prediction), so a
// stage after it (diffnb -> bitshuffle -> rze) exploits the smoothness of the
// codes. Modes (numbers as in cd_values): 0 ABS |x - x'| <= eb, 1 NOA the same
// with eb * (max - min) over the chunk's finite non-fill values, 2 REL
// |x - x'| <= eb * |x| (log2 space, Lg/Pw of docs/FORMAT.md, QUANTIZE).
// The bound holds EXACTLY against the user's double bound: the encoder builds
// the decoder's value with the decoder's own operations and keeps the code only
// if an exact test passes; everything else is an outlier stored bit-exactly.
//
// Stream format (docs/FORMAT.md, the full text with examples).
// Three streams; W = element width (4 or 8), all integers little-endian.
//   codes    : one W-byte unsigned word per element (empty for method LOSSLESS).
//              0 = outlier; otherwise a code whose meaning depends on method/mode:
//              QUANTIZED ABS/NOA: code = zigzag(b) + 1, x' = (T)b * step
//              QUANTIZED REL    : 1 = +0.0, 2 = -0.0,
//                                 code = 3 + (zigzag(b) << 1 | sign), x' = +-Pw((T)b * step)
//              CONSTANT (NOA)   : 1 = the element whose bits are `step`
//              zigzag(b) = 2b for b >= 0, -2b - 1 for b < 0; T = float or double.
//   outliers : the raw W-byte bits of every outlier, in element order (the k-th
//              zero code is the k-th outlier; for LOSSLESS every element).
//   params   : kParamsBytes (40) bytes:
//                0 u8  version (1)       1 u8 mode (0 ABS, 1 NOA, 2 REL)
//                2 u8  width (4 or 8)    3 u8 method (0 QUANTIZED, 1 LOSSLESS, 2 CONSTANT)
//                4 u32 reserved, 0
//                8 u64 element count
//               16 u64 step: bits of a T (zero-extended): ABS/NOA eb2 = 2*eb_w,
//                    REL L = 2*Lg(1+eb_w), CONSTANT the constant's bits, LOSSLESS 0
//               24 f64 the user's bound
//               32 f64 the absolute bound that was enforced (ABS: the user's bound,
//                    NOA: a double <= eb*(max-min), REL: the user's bound, 0 if LOSSLESS)
// Codes are bounded so that code + 1 never wraps: ABS/NOA zigzag(b) < 2^(8W-2),
// REL zigzag(b) < 2^(8W-3). The decoder rejects larger codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::quantize {

enum class Mode : uint8_t { kAbs = 0, kNoa = 1, kRel = 2 };
enum class Method : uint8_t { kQuantized = 0, kLossless = 1, kConstant = 2 };

constexpr size_t kParamsBytes = 40;
constexpr uint8_t kParamsVersion = 1;

struct Config {
  unsigned width = 4;  // 4: little-endian float32, 8: float64
  Mode mode = Mode::kAbs;
  double bound = 0;    // the user's bound: finite and > 0
  // Elements whose bits equal these (low `width` bytes) are stored exactly and
  // left out of NOA's range. For width 4 the high 32 bits must be zero.
  std::optional<uint64_t> fill;
};

struct Streams {
  Bytes codes;
  Bytes outliers;
  Bytes params;
};

// The params stream, parsed and validated.
struct Params {
  Mode mode = Mode::kAbs;
  unsigned width = 4;
  Method method = Method::kQuantized;
  uint64_t count = 0;
  uint64_t step_bits = 0;
  double user_bound = 0;
  double enforced_bound = 0;
};

// in.size must be a multiple of config.width; throws UsageError on a bad config.
void encode(ByteSpan in, const Config& config, Streams& out, const Executor& exec = serial_executor());

// encode() with the codes leaving one kBlockBytes block at a time, for a fused
// chain of block-local encoders after the quantizer (the engine's forward):
// the codes of a whole chunk are then never stored. The plan (method, step)
// is made from the whole input when constructed (NOA's range: one pass).
// encode_block may run for different blocks on different threads, in any
// order; finish() then writes the outliers (in element order) and params.
// The streams are encode()'s bytes. A LOSSLESS plan has no codes (see
// encode()): codes_bytes() is 0 and finish() stores every element.
class BlockwiseEncoder {
 public:
  BlockwiseEncoder(ByteSpan in, const Config& config, const Executor& exec = serial_executor());
  ~BlockwiseEncoder();
  size_t codes_bytes() const { return impl_->codes_bytes(); }
  void encode_block(size_t block, uint8_t* codes) { impl_->encode_block(block, codes); }  // block_length(codes_bytes(), block) bytes
  void finish(Bytes& outliers, Bytes& params) { impl_->finish(outliers, params); }

  struct Impl {
    virtual ~Impl() = default;
    virtual size_t codes_bytes() const = 0;
    virtual void encode_block(size_t block, uint8_t* codes) = 0;
    virtual void finish(Bytes& outliers, Bytes& params) = 0;
  };

 private:
  std::unique_ptr<Impl> impl_;
};

// Throws FormatError unless (codes, outliers, params) are consistent and decode
// to at most max_out bytes. Never reads outside the inputs, never allocates
// more than max_out (plus a few words per block).
void decode(ByteSpan codes, ByteSpan outliers, ByteSpan params, Bytes& out, size_t max_out,
            const Executor& exec = serial_executor());

// The decoded size in bytes that params announce (validated; FormatError).
uint64_t decoded_bytes(ByteSpan params);
// decode() into dst, which holds decoded_bytes(params) bytes; the caller has
// checked that size against its limits. Throws FormatError as decode() does.
void decode_into(ByteSpan codes, ByteSpan outliers, ByteSpan params, uint8_t* dst,
                 const Executor& exec = serial_executor());
// Decoding with the codes arriving block by block (kBlockBytes of codes each,
// the block grid of every CPU stage), as a fused chain of decoders produces
// them: for ABS/NOA quantized params only (is_blockwise). consume() may run
// for different blocks on different threads, in any order; finish() after the
// last checks what only the whole stream can show and places the outliers.
class BlockwiseDecoder {
 public:
  static bool is_blockwise(ByteSpan params);  // validated params say ABS/NOA QUANTIZED
  // codes_bytes: the length of the codes stream to come; FormatError unless
  // consistent with params and outliers.
  BlockwiseDecoder(ByteSpan outliers, ByteSpan params, size_t codes_bytes);
  size_t decoded_bytes() const { return bytes_; }
  void consume(size_t block, const uint8_t* codes, uint8_t* dst);  // block_length(bytes, block) bytes of codes
  void finish(uint8_t* dst);                                       // dst: decoded_bytes() bytes

 private:
  ByteSpan outliers_;
  Params params_;
  size_t bytes_ = 0;
  std::vector<size_t> zeros_;                  // zero codes per block
  std::vector<uint8_t> in_range_;              // per block: every code in range
  std::vector<std::vector<uint8_t>> kept_;     // the codes of blocks with outliers
};

// Parses and validates params alone (for tools); throws FormatError.
Params read_params(ByteSpan params);

}  // namespace fz::quantize
