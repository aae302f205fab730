#include "cuda/forward_graphs.hpp"

#include <algorithm>

#include "cuda/device_pipeline.hpp"
#include "device_forward.hpp"
#include "pipeline_cache.hpp"

namespace fz::engine {
namespace cuda {
namespace {

constexpr size_t kGraphsPerLane = 8;  // each owns a few times its chunk size
constexpr size_t kRecentKeys = 8;

struct NotCapturable {};

// Device memory for a graph being captured: its own (cudaMalloc, once per
// graph), kept as long as the graph.
class CaptureWork final : public DeviceWork {
 public:
  CaptureWork(CapturedForward& graph, Lane& lane) : graph_(graph), lane_(lane) {}
  uint8_t* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc (graph buffers)");
    graph_.memory.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return lane_.stream; }
  void check(int cuda_error, const char* what) override { cuda::check(static_cast<cudaError_t>(cuda_error), what); }
  uint32_t* status_word() override {
    auto* word = reinterpret_cast<uint32_t*>(allocate(sizeof(uint32_t)));
    check(cudaMemsetAsync(word, 0, sizeof(uint32_t), lane_.stream), "status word");
    return word;
  }
  void read_back(const uint8_t*, size_t, uint8_t*) override { throw NotCapturable{}; }

 private:
  CapturedForward& graph_;
  Lane& lane_;
};

// The forward of `pipeline` for chunks of `bytes`, captured on the lane.
std::shared_ptr<CapturedForward> capture_forward(const Pipeline& pipeline, size_t bytes, Lane& lane,
                                                       const std::string& key) {
  auto graph = std::make_shared<CapturedForward>();
  graph->key = key;
  CaptureWork work(*graph, lane);
  graph->input = work.allocate(bytes);
  check(cudaStreamBeginCapture(lane.stream, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  cudaGraph_t captured = nullptr;
  try {
    graph->buffers = run_forward(pipeline, {graph->input, bytes}, work);
  } catch (...) {
    // Leave the stream out of capture mode whatever went wrong.
    if (cudaStreamEndCapture(lane.stream, &captured) == cudaSuccess && captured) (void)cudaGraphDestroy(captured);
    (void)cudaGetLastError();
    throw;
  }
  check(cudaStreamEndCapture(lane.stream, &captured), "cudaStreamEndCapture");
  const cudaError_t instantiated = cudaGraphInstantiate(&graph->exec, captured, 0);
  (void)cudaGraphDestroy(captured);
  check(instantiated, "cudaGraphInstantiate");
  return graph;
}

}  // namespace

std::string forward_key(size_t bytes, const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        const FiniteRange& values) {
  std::string key(reinterpret_cast<const char*>(&bytes), sizeof bytes);
  return key + forward_pipeline_key(dtype, dims, options, values);
}

CapturedForward* forward_graph(const Pipeline& pipeline, size_t bytes, Lane& lane,
                                     const std::string& key) {
  auto& graphs = lane.captured;
  for (size_t i = 0; i < graphs.size(); ++i)
    if (graphs[i]->key == key) {
      std::rotate(graphs.begin() + i, graphs.begin() + i + 1, graphs.end());  // most recently used last
      return graphs.back()->exec ? graphs.back().get() : nullptr;
    }
  auto& recent = lane.recent_keys;
  const auto seen = std::find(recent.begin(), recent.end(), key);
  if (seen == recent.end()) {
    recent.push_back(key);
    if (recent.size() > kRecentKeys) recent.erase(recent.begin());
    return nullptr;
  }
  recent.erase(seen);
  std::shared_ptr<CapturedForward> graph;
  try {
    graph = capture_forward(pipeline, bytes, lane, key);
  } catch (const NotCapturable&) {
    graph = std::make_shared<CapturedForward>();  // remembered, so never tried again
    graph->key = key;
  }
  if (graphs.size() >= kGraphsPerLane) graphs.erase(graphs.begin());
  graphs.push_back(graph);
  return graph->exec ? graph.get() : nullptr;
}

}  // namespace cuda

ForwardGraphCounts forward_graph_counts(int device) {
  cuda::LaneLease lane = cuda::DeviceContext::of(device).lease();
  ForwardGraphCounts counts;
  for (const auto& graph : lane->captured) ++(graph->exec ? counts.captured : counts.uncapturable);
  counts.last_is_graph = !lane->captured.empty() && lane->captured.back()->exec;
  return counts;
}

}  // namespace fz::engine
