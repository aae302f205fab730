// CUDA implementation of the ANS stream format (ans/ans.hpp), host interface
// in ans/ans_cuda.hpp; the kernels are in ans/kernels_cuda.cuh (encode)
// and ans/decode_kernels_cuda.cuh; the tables, head upload, method 0's copy
// and the scans are shared with stage type 15 (ans/rans_common_cuda.cuh).
//
// Encode: the symbol histogram is Huffman's (the same counts and
// out-of-alphabet flag); count_run_tokens gives the run tokens' counts and a
// mask of the symbols other than m; the host normalises both tables and
// writes the head (ans_format.hpp). encode_lanes then codes a lane per
// thread into a scratch of one word per symbol (one input's size), a scan of
// the word counts places the lanes, a second pass codes the rare lanes whose
// words passed their scratch straight into the stream, and finish_stream
// moves the others there, or writes method 0 when the coded stream is not
// smaller (decided on the device: the stream's length stays there).
// Decode: the host parses the head, tables and lane arrays (format::parse);
// the slot tables are built on the device from the entries, the lanes'
// offsets come from a scan of their word counts, fill_mode writes m over the
// whole output, and decode_lanes decodes a lane per thread (writing only the
// groups of 8 symbols that hold another symbol), its tables in shared memory
// when they fit (2^M <= 2^14 on an H100), in global memory otherwise.
#include "ans/ans_cuda.hpp"

#include <algorithm>
#include <cstring>

#include "ans/ans_format.hpp"
#include "ans/decode_kernels_cuda.cuh"
#include "ans/kernels_cuda.cuh"
#include "common/error.hpp"
#include "huffman/huffman_cuda.hpp"

namespace fz::ans::cuda {
namespace {

// Threads per block of a lane kernel: about a block per multiprocessor
// holds every lane, so that small lane counts still spread over the GPU.
unsigned lane_threads(uint64_t lanes) {
  const uint64_t per = (lanes + multiprocessors() - 1) / multiprocessors();
  return static_cast<unsigned>(std::min<uint64_t>(kMaxLaneThreads, std::max<uint64_t>(64, (per + 31) / 32 * 32)));
}

// Blocks of a grid-stride lane kernel: those resident at once, at most one
// lane per thread.
template <typename Kernel>
cudaError_t lane_grid(Kernel kernel, uint64_t lanes, unsigned threads, size_t shared, unsigned& grid) {
  return resident_grid(kernel, lanes, threads, threads, shared, grid);
}

// Scratch of encode = fc | rcp | words | counts | starts | scan storage.
struct EncodeScratch {
  uint32_t* fc;
  unsigned long long* rcp;
  uint16_t* words;
  uint64_t* counts;
  uint64_t* starts;
  void* scan;
  size_t scan_bytes;
  size_t total;
};

EncodeScratch encode_layout(void* scratch, const EncodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  EncodeScratch s{};
  const size_t table = kRunTokens + plan.config.alphabet;
  size_t at = 0;
  const auto take = [&](size_t bytes) {
    uint8_t* p = base ? base + at : nullptr;
    at += aligned(bytes);
    return p;
  };
  s.fc = reinterpret_cast<uint32_t*>(take(4 * table));
  s.rcp = reinterpret_cast<unsigned long long*>(take(8 * table));
  s.words = reinterpret_cast<uint16_t*>(take(2 * plan.n));
  s.counts = reinterpret_cast<uint64_t*>(take(8 * (plan.lanes + 1)));
  s.starts = reinterpret_cast<uint64_t*>(take(8 * (plan.lanes + 1)));
  s.scan_bytes = scan_temp_bytes(plan.lanes);
  s.scan = take(s.scan_bytes);
  s.total = at;
  return s;
}

cudaError_t finish(const uint8_t* symbols, const EncodePlan& plan, const EncodeScratch* s, uint8_t* out,
                   uint64_t* encoded_size, cudaStream_t stream) {
  StoredPrefix prefix{};
  std::memcpy(prefix.bytes, plan.stored_prefix.data(), plan.stored_prefix.size());
  prefix.size = static_cast<uint32_t>(plan.stored_prefix.size());
  const uint64_t items = s ? 32 * plan.lanes : plan.stored_size;
  const unsigned grid = static_cast<unsigned>(
      std::max<uint64_t>(1, std::min<uint64_t>((items + kPrepThreads - 1) / kPrepThreads, 8u * multiprocessors())));
  finish_stream<<<grid, kPrepThreads, 0, stream>>>(symbols, plan.n, plan.lanes, plan.config.lane_symbols,
                                                   s ? s->words : nullptr, s ? s->starts : nullptr, out,
                                                   plan.payload_at, plan.stored_size, prefix, s == nullptr,
                                                   encoded_size);
  return cudaGetLastError();
}

}  // namespace

// ---- host: encode --------------------------------------------------------------

cudaError_t symbol_histogram(const uint8_t* symbols, size_t n, uint32_t alphabet, uint64_t* counts,
                             uint32_t* bad_symbols, cudaStream_t stream) {
  return huffman::cuda::histogram(symbols, n, alphabet, counts, bad_symbols, stream);
}

TokenPlan plan_tokens(const uint64_t* counts, uint64_t n, const Config& config) {
  format::check_config(config);
  TokenPlan plan;
  plan.n = n;
  plan.lanes = format::lane_count(n, config);
  if (n == 0) return plan;
  plan.symbol_counts.assign(counts, counts + config.alphabet);
  plan.mode = format::mode_of(plan.symbol_counts);
  plan.symbol_counts[plan.mode] = 0;  // every other symbol is one symbol token
  return plan;
}

size_t mask_bytes(uint64_t n, const Config& config) {
  return static_cast<size_t>(4 * format::lane_count(n, config) * ((config.lane_symbols + 31) / 32));
}

cudaError_t count_run_tokens(const uint8_t* symbols, const TokenPlan& tokens, const Config& config, uint32_t* mask,
                             uint64_t* run_counts, cudaStream_t stream) {
  cudaError_t err = cudaMemsetAsync(run_counts, 0, sizeof(uint64_t) * kRunTokens, stream);
  if (err != cudaSuccess || tokens.n == 0) return err;
  if (tokens.lanes > kMaxLanes) return cudaErrorInvalidValue;
  const uint64_t warps_per_block = kCountThreads / 32;
  const uint64_t blocks = (tokens.lanes + warps_per_block - 1) / warps_per_block;
  count_run_tokens_kernel<<<static_cast<unsigned>(blocks), kCountThreads, 0, stream>>>(
      symbols, tokens.n, config.lane_symbols, tokens.lanes, tokens.mode, (config.lane_symbols + 31) / 32, mask,
      reinterpret_cast<unsigned long long*>(run_counts));
  return cudaGetLastError();
}

EncodePlan plan_encode(const TokenPlan& tokens, const uint64_t* run_counts, const Config& config) {
  format::check_config(config);
  EncodePlan plan;
  plan.n = tokens.n;
  plan.lanes = tokens.lanes;
  plan.config = config;
  if (tokens.n == 0) {
    plan.stored = true;
    plan.stored_prefix = format::write_stored(ByteSpan());
    plan.stored_size = plan.max_encoded_bytes = plan.stored_prefix.size();
    return plan;
  }
  const std::vector<uint32_t> run_freq =
      format::normalize(std::vector<uint64_t>(run_counts, run_counts + kRunTokens), config.prob_bits);
  const std::vector<uint32_t> symbol_freq = format::normalize(tokens.symbol_counts, config.prob_bits);
  plan.head = format::write_head(tokens.n, tokens.mode, run_freq, symbol_freq);
  size_t varint_bytes = 1;
  for (uint64_t v = tokens.n; v >= 0x80; v >>= 7) ++varint_bytes;
  plan.stored_prefix.assign(plan.head.begin(), plan.head.begin() + varint_bytes);  // the head starts with n
  plan.stored_prefix.push_back(kMethodStored);
  plan.stored_size = varint_bytes + 1 + 2 * tokens.n;
  plan.states_at = plan.head.size();
  plan.words_at = plan.states_at + 4 * plan.lanes;
  plan.payload_at = plan.words_at + 2 * plan.lanes;
  plan.stored = plan.payload_at >= plan.stored_size;
  plan.run_entries = entries_of<TableEntry>(run_freq);
  plan.symbol_entries = entries_of<TableEntry>(symbol_freq);
  plan.max_encoded_bytes = plan.stored_size;
  return plan;
}

size_t encode_scratch_bytes(const EncodePlan& plan) {
  if (plan.stored) return 0;
  return encode_layout(nullptr, plan).total;
}

cudaError_t encode(const uint8_t* symbols, const uint32_t* mask, const EncodePlan& plan, uint8_t* out,
                   uint64_t* encoded_size, void* scratch, cudaStream_t stream) {
  if ((reinterpret_cast<uintptr_t>(out) & 3) != 0 || plan.stored_prefix.size() > sizeof(StoredPrefix::bytes) ||
      plan.lanes > kMaxLanes)
    return cudaErrorInvalidValue;
  if (plan.stored) return finish(symbols, plan, nullptr, out, encoded_size, stream);
  const EncodeScratch s = encode_layout(scratch, plan);
  const uint32_t table = kRunTokens + plan.config.alphabet;
  cudaError_t err = upload_head(plan.head, out, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.fc, 0, 4 * table, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.rcp, 0, 8 * table, stream);
  if (err == cudaSuccess) err = upload_entries(plan.run_entries, 0, s.fc, s.rcp, nullptr, nullptr, nullptr, stream);
  if (err == cudaSuccess)
    err = upload_entries(plan.symbol_entries, kRunTokens, s.fc, s.rcp, nullptr, nullptr, nullptr, stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(s.counts + plan.lanes, 0, sizeof(uint64_t), stream);
  if (err != cudaSuccess) return err;

  EncodeArgs a{};
  a.symbols = symbols;
  a.mask = mask;
  a.n = plan.n;
  a.lanes = plan.lanes;
  a.S = plan.config.lane_symbols;
  a.mask_words = (plan.config.lane_symbols + 31) / 32;
  a.prob_bits = plan.config.prob_bits;
  a.table_size = table;
  a.fc = s.fc;
  a.rcp = s.rcp;
  a.scratch = s.words;
  a.out = out;
  a.states_at = plan.states_at;
  a.words_at = plan.words_at;
  a.payload_at = plan.payload_at;
  a.stored_size = plan.stored_size;
  a.counts = s.counts;
  a.starts = s.starts;
  const unsigned threads = lane_threads(plan.lanes);
  const size_t table_bytes = size_t{12} * table;
  const bool in_shared = table_bytes <= shared_limit();
  const auto kernel = in_shared ? encode_lanes<true> : encode_lanes<false>;
  const size_t shared = in_shared ? table_bytes : 0;
  unsigned grid = 0;
  err = lane_grid(kernel, plan.lanes, threads, shared, grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, threads, shared, stream>>>(a);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  err = scan_counts(s.counts, s.starts, plan.lanes, s.scan, s.scan_bytes, stream);
  if (err != cudaSuccess) return err;
  a.second_pass = true;
  kernel<<<grid, threads, shared, stream>>>(a);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  return finish(symbols, plan, &s, out, encoded_size, stream);
}

// ---- host: decode --------------------------------------------------------------

DecodePlan plan_decode(const uint8_t* prefix, size_t prefix_size, size_t stream_size, const Config& config,
                       size_t max_out) {
  const format::Layout layout = format::parse(prefix, prefix_size, stream_size, config, max_out);
  DecodePlan plan;
  plan.config = config;
  plan.stream_size = stream_size;
  plan.needed = layout.needed;
  if (layout.needed != 0) return plan;
  plan.n = layout.n;
  plan.method = layout.method;
  plan.payload_at = layout.payload_at;
  if (layout.n == 0 || layout.method == kMethodStored) return plan;
  plan.lanes = layout.lanes;
  plan.mode = layout.mode;
  plan.has_symbols = layout.symbol_cum.back() != 0;
  plan.states_at = layout.states_at;
  plan.words_at = layout.words_at;
  plan.run_entries = entries_of<TableEntry>(layout.run_freq);
  plan.symbol_entries = entries_of<TableEntry>(layout.symbol_freq);
  return plan;
}

namespace {

// Scratch of decode = fb (2T u32) | sym_tok (T u16) | run_tok (T u8) | counts | starts | scan storage.
struct DecodeScratch {
  uint32_t* fb;
  uint16_t* sym_tok;
  uint8_t* run_tok;
  uint64_t* counts;
  uint64_t* starts;
  void* scan;
  size_t scan_bytes;
  size_t total;
};

DecodeScratch decode_layout(void* scratch, const DecodePlan& plan) {
  auto* base = static_cast<uint8_t*>(scratch);
  DecodeScratch s{};
  const size_t T = size_t{1} << plan.config.prob_bits;
  size_t at = 0;
  const auto take = [&](size_t bytes) {
    uint8_t* p = base ? base + at : nullptr;
    at += aligned(bytes);
    return p;
  };
  s.fb = reinterpret_cast<uint32_t*>(take(8 * T));
  s.sym_tok = reinterpret_cast<uint16_t*>(take(2 * T));
  s.run_tok = take(T);
  s.counts = reinterpret_cast<uint64_t*>(take(8 * (plan.lanes + 1)));
  s.starts = reinterpret_cast<uint64_t*>(take(8 * (plan.lanes + 1)));
  s.scan_bytes = scan_temp_bytes(plan.lanes);
  s.scan = take(s.scan_bytes);
  s.total = at;
  return s;
}

}  // namespace

size_t decode_scratch_bytes(const DecodePlan& plan) {
  if (plan.n == 0 || plan.method == kMethodStored) return 0;
  return decode_layout(nullptr, plan).total;
}

cudaError_t decode(const uint8_t* in, const DecodePlan& plan, uint8_t* out, uint32_t* status, void* scratch,
                   cudaStream_t stream) {
  if (plan.needed != 0 || (reinterpret_cast<uintptr_t>(out) & 15) != 0 || plan.lanes > kMaxLanes)
    return cudaErrorInvalidValue;
  if (plan.n == 0) return cudaSuccess;
  if (plan.method == kMethodStored) {
    const unsigned grid = static_cast<unsigned>(
        std::max<uint64_t>(1, std::min<uint64_t>((plan.n + kPrepThreads - 1) / kPrepThreads, 8u * multiprocessors())));
    copy_stored<<<grid, kPrepThreads, 0, stream>>>(in + plan.payload_at, plan.n, plan.config.alphabet, out, status);
    return cudaGetLastError();
  }
  if (plan.run_entries.empty()) return cudaErrorInvalidValue;
  const DecodeScratch s = decode_layout(scratch, plan);
  const uint32_t T = 1u << plan.config.prob_bits;
  cudaError_t err = cudaMemsetAsync(s.fb, 0, aligned(8 * size_t{T}) + aligned(2 * size_t{T}) + T, stream);
  if (err == cudaSuccess) err = upload_entries(plan.run_entries, 0, nullptr, nullptr, s.fb, s.run_tok, nullptr, stream);
  if (err == cudaSuccess)
    err = upload_entries(plan.symbol_entries, 0, nullptr, nullptr, s.fb + T, nullptr, s.sym_tok, stream);
  if (err != cudaSuccess) return err;
  const unsigned prep_grid = static_cast<unsigned>(std::max<uint64_t>(
      1, std::min<uint64_t>((plan.lanes + kPrepThreads) / kPrepThreads, 8u * multiprocessors())));
  widen_counts<<<prep_grid, kPrepThreads, 0, stream>>>(in + plan.words_at, plan.lanes, s.counts);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  err = scan_counts(s.counts, s.starts, plan.lanes, s.scan, s.scan_bytes, stream);
  if (err != cudaSuccess) return err;

  DecodeArgs a{};
  a.stream = in;
  a.n = plan.n;
  a.lanes = plan.lanes;
  a.S = plan.config.lane_symbols;
  a.prob_bits = plan.config.prob_bits;
  a.mode = plan.mode;
  a.has_symbols = plan.has_symbols;
  a.states_at = plan.states_at;
  a.words_at = plan.words_at;
  a.payload_at = plan.payload_at;
  a.starts = s.starts;
  a.fb = s.fb;
  a.run_tok = s.run_tok;
  a.sym_tok = s.sym_tok;
  a.out = out;
  a.status = status;
  fill_mode<<<static_cast<unsigned>(std::max<uint64_t>(
                  1, std::min<uint64_t>((plan.n / 8 + kPrepThreads - 1) / kPrepThreads, 8u * multiprocessors()))),
              kPrepThreads, 0, stream>>>(out, plan.n, plan.mode);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  const unsigned threads = lane_threads(plan.lanes);
  const size_t table_bytes = size_t{11} * T;
  const bool in_shared = table_bytes <= shared_limit();
  const auto kernel = in_shared ? decode_lanes<true> : decode_lanes<false>;
  const size_t shared = in_shared ? table_bytes : 0;
  unsigned grid = 0;
  err = lane_grid(kernel, plan.lanes, threads, shared, grid);
  if (err != cudaSuccess) return err;
  kernel<<<grid, threads, shared, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace fz::ans::cuda
