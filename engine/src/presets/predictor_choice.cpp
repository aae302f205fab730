// cuszhi-cr's predictor choice per chunk (predictor_choice.hpp): the sample
// blocks, and their cost under each pipeline.
#include "predictor_choice.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "ans/ans_stage.hpp"
#include "ans/interleaved_stage.hpp"
#include "code_cost.hpp"
#include "common/error.hpp"
#include "lossy_common.hpp"
#include "node_memo.hpp"
#include "pipeline_cache.hpp"
#include "preset_table.hpp"

namespace fz::engine {
namespace {

// A block's edge per rank: 32768, 16384 and 16384 points, large enough that
// the spline's coarse levels and both coders' tables are not all that a
// block costs, small enough that four of them are ~12% of a 4 MiB chunk;
// in a chunk of fewer than 16 such blocks, the largest edge down to half
// that whose four blocks are at most a quarter of the chunk (a 384^2 chunk:
// 96^2, not 44% of it). 3-D blocks stay 32^3: the folded spline's cost is
// that of 2-D slices of the block, and slices of 23^2 or less misjudge it
// (ncl hgt 21x73x144: 3-D chosen at every bound, folded 1.2-2x smaller).
size_t block_edge(size_t rank, size_t elements) {
  const size_t full = rank >= 3 ? 32 : rank == 2 ? 128 : 16384, least = full / 2;
  if (rank >= 3) return full;
  if (rank == 1) return std::min(full, std::max(least, elements / 16));
  size_t e = full;
  while (e > least && (rank >= 3 ? e * e * e : e * e) * 16 > elements) --e;
  return e;
}

size_t product(const std::vector<size_t>& v) {
  size_t n = 1;
  for (size_t d : v) n *= d;
  return n;
}

// One pipeline's cost over the sample: the bytes of its stored streams but
// the ANS stages' outputs, summed over the blocks, and each ANS stage's
// input codes of every block, costed once at the end as if concatenated: a
// chunk pays for each ANS stage's tables and lane headers once, and so does
// the sample (costing each block apart overweighed the spline's three code
// groups' tables against Lorenzo's one: up to 5% off on a 2-D field). The
// ANS stages' bytes are estimated from the codes' histograms
// (coded_bytes_estimate), not coded: running the coder was most of the
// choice's time. Each block's codes are counted by the task that made them,
// the runs of each stage's most frequent code then counted a block at a
// time, and both joined at the end (code_cost.hpp): counted at the end, one
// stream after another, they were a third of the choice's time and half its
// wait on many cores.
class SampleCost {
 public:
  // With `remember` (the pipeline itself, cached: the block is the whole
  // chunk), the spline node's outputs are kept for the chunk's compression
  // (node_memo.hpp).
  void add(const Pipeline& pipeline, ByteSpan block, std::shared_ptr<const Pipeline> remember = nullptr) {
    StageContext ctx{serial_executor(), SIZE_MAX};
    std::vector<Bytes> buffers(1);
    std::vector<bool> coded_later(1, false);
    auto span_of = [&](uint8_t id) { return id == Pipeline::kChunk ? block : ByteSpan(buffers[id]); };
    size_t ans_index = 0;
    for (const StageNode& node : pipeline.nodes()) {
      const size_t end = size_t{node.first_output} + node.output_count;
      if (buffers.size() < end) buffers.resize(end), coded_later.resize(end, false);
      const StageType type = node.stage->type();
      if (type == StageType::Ans || type == StageType::AnsInterleaved) {
        if (ans_.size() <= ans_index) ans_.push_back(coded_for(*node.stage));
        const ByteSpan codes = span_of(node.inputs[0]);
        Coded& coded = ans_[ans_index++];
        coded.pieces.emplace_back(codes.data, codes.data + codes.size);
        coded.counts.push_back(count_codes(codes));
        coded_later[node.first_output] = true;
        continue;
      }
      std::vector<ByteSpan> in;
      for (uint8_t id : node.inputs) in.push_back(span_of(id));
      std::vector<Bytes> out;
      try {
        node.stage->forward(in, out, ctx);
      } catch (const NotSmallerError&) {  // (not with an unlimited frame; as raw if ever)
        stored_ += block.size;
        return;
      }
      for (size_t i = 0; i < out.size(); ++i) buffers[node.first_output + i] = std::move(out[i]);
    }
    for (uint8_t id : pipeline.stored_buffers())
      if (!coded_later[id]) stored_ += span_of(id).size;
    if (!remember) return;
    const std::vector<StageNode>& nodes = pipeline.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].stage->type() != StageType::Spline) continue;
      std::vector<ByteSpan> in;
      for (uint8_t id : nodes[i].inputs) in.push_back(span_of(id));
      std::vector<Bytes> out;
      for (size_t k = 0; k < nodes[i].output_count; ++k) out.push_back(std::move(buffers[nodes[i].first_output + k]));
      remember_node_outputs(std::move(remember), i, in, std::move(out));
      return;
    }
  }

  // Appends another block's part: its stored bytes, and its codes after
  // this one's for each ANS stage (in block order, as one pass would).
  void merge(SampleCost&& other) {
    stored_ += other.stored_;
    for (size_t i = 0; i < other.ans_.size(); ++i) {
      if (ans_.size() <= i) {
        ans_.push_back(std::move(other.ans_[i]));
        continue;
      }
      Coded& mine = ans_[i];
      for (Bytes& piece : other.ans_[i].pieces) mine.pieces.push_back(std::move(piece));
      for (CodeCounts& counts : other.ans_[i].counts) mine.counts.push_back(std::move(counts));
    }
  }

  // The second pass of the estimate (code_cost.hpp), a piece at a time so
  // that threads can share it: the pieces of all ANS stages, numbered.
  size_t pieces() const {
    size_t k = 0;
    for (const Coded& c : ans_) k += c.pieces.size();
    return k;
  }
  void count_runs(size_t k) {
    for (Coded& c : ans_) {
      if (k >= c.pieces.size()) {
        k -= c.pieces.size();
        continue;
      }
      if (c.runs.size() != c.pieces.size()) throw std::logic_error("SampleCost: runs counted before their run codes");
      c.runs[k] = count_code_runs(ByteSpan(c.pieces[k]), c.run_code);
      return;
    }
  }
  // Before count_runs: each ANS stage's run code, from all its pieces' counts.
  void find_run_codes() {
    for (Coded& c : ans_) {
      c.run_code = run_code_of(counts_of(c));
      c.runs.assign(c.pieces.size(), CodeRuns());
    }
  }

  uint64_t bytes(CodedBytes coded) const {
    uint64_t n = stored_;
    for (const Coded& c : ans_) {
      if (coded == CodedBytes::kEstimate) {
        n += coded_bytes_estimate(counts_of(c), c.runs);
        continue;
      }
      Bytes all;
      for (const Bytes& piece : c.pieces) all.insert(all.end(), piece.begin(), piece.end());
      StageContext ctx{serial_executor(), SIZE_MAX};
      std::vector<Bytes> out;
      (c.interleaved ? make_ansi({c.config.alphabet, c.config.prob_bits}) : make_ans(c.config))
          ->forward({ByteSpan(all)}, out, ctx);
      n += out.at(0).size();
    }
    return n;
  }

 private:
  struct Coded {
    ans::Config config;        // the alphabet and M (and type 14's lane size)
    bool interleaved = false;  // stage type 15 (cuszhi-cr since 2026-11-28)
    std::vector<Bytes> pieces;       // every block's codes, in block order
    std::vector<CodeCounts> counts;  // each piece's, counted by the thread that made it
    uint16_t run_code = 0;           // find_run_codes
    std::vector<CodeRuns> runs;      // count_runs
  };
  static std::vector<const CodeCounts*> counts_of(const Coded& c) {
    std::vector<const CodeCounts*> all;
    for (const CodeCounts& k : c.counts) all.push_back(&k);
    return all;
  }
  // The estimate (code_cost.hpp) models type 14's tokens and lane records;
  // type 15's pairs cost the same to within its lane records (0.5-0.9%),
  // which every candidate pays alike.
  static Coded coded_for(const Stage& stage) {
    if (stage.type() == StageType::AnsInterleaved) {
      const ans::InterleavedConfig& c = static_cast<const AnsInterleavedStage&>(stage).coder_config();
      return {ans::Config{c.alphabet, c.prob_bits, 8192}, true, {}, {}, 0, {}};
    }
    return {static_cast<const AnsStage&>(stage).coder_config(), false, {}, {}, 0, {}};
  }
  uint64_t stored_ = 0;
  std::vector<Coded> ans_;
};

}  // namespace

bool chooses_predictor(const DataType& dtype, const Options& options) {
  return kCuszhiPredictorChoice && options.preset == Preset::CuszHiCr &&
         options.spline_tuning == SplineTuning::kRatioFirst && dtype.element_class == ElementClass::Float &&
         (dtype.size == 4 || dtype.size == 8);
}

std::vector<SampleBox> sample_boxes(const std::vector<size_t>& dims) {
  const size_t rank = dims.size();
  if (rank == 0 || product(dims) == 0) return {};
  if (product(dims) <= kWholeSampleElements) return {{std::vector<size_t>(rank, 0), dims}};
  std::vector<SampleBox> boxes;
  const size_t edge = block_edge(rank, product(dims));
  for (size_t j = 0; j < kSampleBlocks; ++j) {
    SampleBox box;
    for (size_t a = 0; a < rank; ++a) {
      const size_t e = std::min(edge, dims[a]);
      // Slot (j * (2a + 1) + a) mod k of k equal parts along axis a: axis 0
      // walks the slots in order, the others in other orders, so the blocks
      // do not all lie on the chunk's diagonal.
      const size_t slot = (j * (2 * a + 1) + a) % kSampleBlocks;
      box.start.push_back((dims[a] - e) * (2 * slot + 1) / (2 * kSampleBlocks));
      box.extent.push_back(e);
    }
    boxes.push_back(std::move(box));
  }
  return boxes;
}

Box3 three_axes(const std::vector<size_t>& dims, const SampleBox& box) {
  Box3 b;
  const size_t shift = 3 - dims.size();
  for (size_t a = 0; a < dims.size(); ++a) {
    b.dims[a + shift] = dims[a];
    b.start[a + shift] = box.start[a];
    b.extent[a + shift] = box.extent[a];
  }
  return b;
}

void read_host_box(ByteSpan chunk, const std::vector<size_t>& dims, unsigned width, const SampleBox& box,
                   uint8_t* dst) {
  const Box3 b = three_axes(dims, box);
  const size_t *d = b.dims, *s = b.start, *e = b.extent;
  const size_t row = e[2] * width;
  for (size_t z = 0; z < e[0]; ++z)
    for (size_t y = 0; y < e[1]; ++y) {
      const size_t at = (((s[0] + z) * d[1] + s[1] + y) * d[2] + s[2]) * width;
      std::memcpy(dst, chunk.data + at, row);
      dst += row;
    }
}

SampleCosts sample_costs(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const FiniteRange& values, const BoxReader& read_box, CodedBytes coded,
                         const Executor& exec) {
  ChunkFacts facts = facts_from_range(options, values);
  if (!predictor_bound(dtype, facts)) return {};
  const PresetRow* row = preset_row(Preset::CuszHiCr);
  const std::vector<size_t> shape = predictor_dims(dims);
  const bool foldable = shape.size() == 3;
  const std::vector<SampleBox> boxes = sample_boxes(shape);
  std::vector<Bytes> samples(boxes.size());
  for (size_t b = 0; b < boxes.size(); ++b) {  // (the GPU's reads share one stream: in order, here)
    samples[b].resize(product(boxes[b].extent) * dtype.size);
    read_box(boxes[b], samples[b].data());
  }
  // Every (block, candidate) on its own, in parallel, each with the chunk's
  // facts (its bound, its level tuning from the chunk's range, its fill and
  // missing masks) over the block's shape; then summed per candidate in
  // block order, so the costs do not depend on the threads (on the GPU path
  // this host work was most of cuszhi-cr's compression time).
  enum Candidate : size_t { kSpline, kLorenzo, kFolded, kCandidates };
  const bool whole = boxes.size() == 1 && boxes[0].extent == shape;
  std::vector<SampleCost> parts(boxes.size() * kCandidates);
  exec.parallel_tasks(parts.size(), [&](size_t task) {
    const size_t b = task / kCandidates, candidate = task % kCandidates;
    if ((candidate == kFolded && !foldable) || (candidate == kSpline && whole)) return;
    ChunkFacts f = facts;
    f.lorenzo = candidate == kLorenzo;
    f.fold = candidate == kFolded;
    const std::vector<uint64_t> box_dims(boxes[b].extent.begin(), boxes[b].extent.end());
    parts[task].add(row->build(dtype, box_dims, options, f), ByteSpan(samples[b]));
  });
  if (whole) {
    // The whole chunk: the spline pipeline the chunk is compressed with when
    // it wins, from the cache, whose spline outputs are kept for this thread
    // (the one that compresses the chunk next; node_memo.hpp).
    FiniteRange spline_values = values;
    spline_values.lorenzo = false;
    spline_values.fold = false;
    const auto chunk_pipeline = cached_forward_pipeline(dtype, dims, options, spline_values);
    parts[kSpline].add(*chunk_pipeline, ByteSpan(samples[0]), chunk_pipeline);
  }
  // Each candidate's blocks in block order; the runs of each ANS stage's
  // codes, every block's on its own (the second pass of the estimate); then
  // each candidate's bytes, the blocks' counts and runs joined.
  SampleCost totals[kCandidates];
  std::vector<std::pair<size_t, size_t>> run_passes;  // (candidate, piece)
  for (size_t candidate = 0; candidate < kCandidates; ++candidate) {
    for (size_t b = 0; b < boxes.size(); ++b) totals[candidate].merge(std::move(parts[b * kCandidates + candidate]));
    totals[candidate].find_run_codes();
    for (size_t k = 0; k < totals[candidate].pieces(); ++k) run_passes.emplace_back(candidate, k);
  }
  if (coded == CodedBytes::kEstimate)
    exec.parallel_tasks(run_passes.size(), [&](size_t j) { totals[run_passes[j].first].count_runs(run_passes[j].second); });
  uint64_t bytes[kCandidates] = {0, 0, 0};
  exec.parallel_tasks(foldable ? 3 : 2, [&](size_t candidate) { bytes[candidate] = totals[candidate].bytes(coded); });
  return {bytes[kSpline], bytes[kLorenzo], foldable ? bytes[kFolded] : 0};
}

std::vector<size_t> fold_dims(const std::vector<size_t>& dims) {
  if (dims.size() != 3) return dims;
  return {dims[0] * dims[1], dims[2]};
}

PredictorChoice choose_predictor(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const FiniteRange& values, const BoxReader& read_box, const Executor& exec) {
  const SampleCosts c = sample_costs(dtype, dims, options, values, read_box, CodedBytes::kEstimate, exec);
  PredictorChoice choice;
  choice.fold = c.folded != 0 && c.folded < c.spline;
  const uint64_t spline = choice.fold ? c.folded : c.spline;
  // The blocks cost the spline more than its whole chunk does (its
  // interpolation falls back at every block face and its coarse levels stop
  // at the block), Lorenzo hardly: on the real fields the sample's ratio
  // lorenzo / spline sits 2-6% below the whole chunk's. Lorenzo must win by
  // kLorenzoMarginPercent (predictor_choice.hpp).
  choice.lorenzo = c.lorenzo * 100 < spline * (100 - kLorenzoMarginPercent);
  if (choice.lorenzo) choice.fold = false;
  return choice;
}

}  // namespace fz::engine
