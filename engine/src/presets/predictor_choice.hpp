// cuszhi-cr's per-chunk choice between its spline pipeline and a Lorenzo
// pipeline coded by the same ANS stage (issue 30 item 1): no single
// predictor wins everywhere (SZ3's best-of picks Lorenzo+regression on half
// the held-out fields at NOA 1e-3 and 1e-4, where our Lorenzo preset beats
// the spline by up to 25%). The choice is a fact of the chunk (FiniteRange::
// lorenzo), found from a fixed set of sample blocks that both pipelines
// encode on the CPU, by the bytes they store: the same chunk gives the same
// choice on every backend and thread count, because the GPU path copies the
// same blocks to the host and runs the same function.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/executor.hpp"
#include "fz/fz.hpp"
#include "lossy_common.hpp"
#include "value_range.hpp"

namespace fz::engine {

// Off switch for the choice: false makes cuszhi-cr always the spline (the
// frames written before the choice existed).
constexpr bool kCuszhiPredictorChoice = true;

// cuszhi-cr's Lorenzo pipeline (lorenzo.cpp): [byteswap] -> lorenzo (radius
// kCuszhiLorenzoRadius) -> ans (A = 2R, M 14, S 8192) on the codes, outliers
// and fill mask stored as cusz stores them.
constexpr uint32_t kCuszhiLorenzoRadius = 4096;
Pipeline cuszhi_lorenzo_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const ChunkFacts& facts);

// Whether `options` make cuszhi-cr choose its predictor per chunk: preset 6
// with the default ratio-first tuning (off, quality-first and manual tunings
// ask for the spline and keep it).
bool chooses_predictor(const DataType& dtype, const Options& options);

// One sample block: start and extent per axis of the predictor shape
// (predictor_dims), slowest axis first, as many axes as that shape has.
struct SampleBox {
  std::vector<size_t> start;
  std::vector<size_t> extent;
};

// The fixed sample of a chunk of predictor shape `dims`: the whole chunk
// when it holds at most kWholeSampleElements, else kSampleBlocks blocks of
// 32^3 (3-D), 128^2 (2-D) or 16384 (1-D) points, smaller (down to half the
// edge) where four such blocks would be more than a quarter of the chunk,
// each axis's position from a fixed stride rule (spread over the chunk, no
// two blocks on one diagonal).
constexpr size_t kSampleBlocks = 4;
constexpr size_t kWholeSampleElements = 65536;
constexpr uint64_t kLorenzoMarginPercent = 5;
std::vector<SampleBox> sample_boxes(const std::vector<size_t>& dims);

// A box over three axes (leading extents of 1 added), rows along the
// fastest: what a copy of the box (memcpy per row, cudaMemcpy3D) takes.
struct Box3 {
  size_t dims[3] = {1, 1, 1};
  size_t start[3] = {0, 0, 0};
  size_t extent[3] = {1, 1, 1};
};
Box3 three_axes(const std::vector<size_t>& dims, const SampleBox& box);

// Copies one box's elements (extent's product x element size, row-major,
// the chunk's byte order) into dst.
using BoxReader = std::function<void(const SampleBox& box, uint8_t* dst)>;

// The box from a chunk in host memory (row-major, predictor shape dims).
void read_host_box(ByteSpan chunk, const std::vector<size_t>& dims, unsigned width, const SampleBox& box,
                   uint8_t* dst);

// The sample's bytes under each pipeline (both 0 when the chunk has no
// usable bound). The entropy stages' bytes are estimated from the codes'
// histograms (code_cost.hpp), which the choice uses; kCoder runs the coder
// instead (what the choice did before: tests compare the two).
struct SampleCosts {
  uint64_t spline = 0;
  uint64_t lorenzo = 0;
  uint64_t folded = 0;  // the spline over each box folded (fold_dims); 0 unless the shape is 3-D
};
enum class CodedBytes { kEstimate, kCoder };
SampleCosts sample_costs(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const FiniteRange& values, const BoxReader& read_box,
                         CodedBytes coded = CodedBytes::kEstimate, const Executor& exec = serial_executor());

// The spline over a 3-D shape folded into 2-D: the slowest two axes merged,
// {d0 * d1, d2} (every other shape as it is). The elements keep their order,
// so the chunk, its fill mask and the decoder need nothing else: the frame's
// spline config holds the 2-D dims. A short, weakly correlated slow axis (a
// dozen model levels, months) predicts the 3-D spline's points between
// slices badly; slices of 2-D do without them (ncl hgt 21x73x144 at NOA
// 1e-2: 43.6 -> 87.6; nc4uvt T 14x64x128: 48.7 -> 91.2), and lose where the
// slow axis is smooth (a1b airtemp 240x37x49: 26.3 -> 20.0).
std::vector<size_t> fold_dims(const std::vector<size_t>& dims);

// The chunk's pipeline: `lorenzo` when the Lorenzo pipeline stores the
// sample in at least kLorenzoMarginPercent fewer bytes than the better of
// the two splines; else `fold` when the folded spline stores it in fewer
// bytes than the 3-D one. `values` are the chunk's facts as chunk_values
// found them; neither when the chunk has no usable bound.
struct PredictorChoice {
  bool lorenzo = false;
  bool fold = false;
};
// The candidates run on `exec` (the costs, and so the choice, do not depend
// on it).
PredictorChoice choose_predictor(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const FiniteRange& values, const BoxReader& read_box,
                                 const Executor& exec = serial_executor());

}  // namespace fz::engine
