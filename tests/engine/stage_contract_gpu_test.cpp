// The GPU half of the stage contract (stage_contract_test.cpp is the CPU
// half): for every listed stage with a CUDA part (stage_list.inc), with the
// samples it lists, the GPU forward writes the CPU forward's bytes, and the
// GPU inverse of the CPU's streams gives the CPU inverse's bytes, with the
// streams' host bytes (a frame in host memory) and without (a device-resident
// frame, or streams an earlier GPU inverse rebuilt). GPU tests: labelled
// "gpu", skipped where no CUDA device is usable.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "common/stage/stage_samples.hpp"
#include "stage_names.hpp"
#include "thread_pool.hpp"

namespace fz::engine {
namespace {

// DeviceWork over plain CUDA calls: what the engine's device lanes give a
// stage, without the pipeline around it (cuda/device_forward.cpp).
class TestDeviceWork final : public DeviceWork {
 public:
  TestDeviceWork() {
    if (cudaStreamCreate(&stream_) != cudaSuccess) throw std::runtime_error("cudaStreamCreate");
  }
  ~TestDeviceWork() override {
    cudaStreamSynchronize(stream_);
    for (void* p : allocations_) cudaFree(p);
    cudaStreamDestroy(stream_);
  }
  uint8_t* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc");
    allocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void* stream() const override { return stream_; }
  void check(int cuda_error, const char* what) override {
    if (cuda_error != cudaSuccess)
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(static_cast<cudaError_t>(cuda_error)));
  }
  uint32_t* status_word() override {
    if (!status_) {
      status_ = reinterpret_cast<uint32_t*>(allocate(sizeof(uint32_t)));
      check(cudaMemsetAsync(status_, 0, sizeof(uint32_t), stream_), "cudaMemsetAsync");
    }
    return status_;
  }
  void read_back(const uint8_t* device, size_t bytes, uint8_t* host) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "read back");
    check(cudaStreamSynchronize(stream_), "read back");
  }

  DeviceBuffer upload(const Bytes& bytes, bool with_host_bytes) {
    DeviceBuffer buffer{allocate(bytes.size()), bytes.size(), nullptr, with_host_bytes ? bytes.data() : nullptr};
    check(cudaMemcpyAsync(buffer.data, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream_), "upload");
    return buffer;
  }
  // The bytes with their length on the device only (as a Huffman stream
  // reaches the RZE after it), in an allocation `slack` bytes longer whose
  // tail holds junk that must not be read as input.
  DeviceBuffer upload_sized_on_device(const Bytes& bytes, size_t slack) {
    Bytes padded = bytes;
    for (size_t i = 0; i < slack; ++i) padded.push_back(static_cast<uint8_t>(0xA5 ^ i));
    DeviceBuffer buffer = upload(padded, false);
    buffer.size = 0;
    buffer.capacity = padded.size();
    buffer.device_size = reinterpret_cast<uint64_t*>(allocate(sizeof(uint64_t)));
    const uint64_t length = bytes.size();
    check(cudaMemcpy(buffer.device_size, &length, sizeof length, cudaMemcpyHostToDevice), "upload length");
    return buffer;
  }
  // The stream's length: on the host, or read back from the device.
  uint64_t length(const DeviceBuffer& buffer) {
    if (!buffer.device_size) return buffer.size;
    uint64_t on_device = 0;
    read_back(reinterpret_cast<const uint8_t*>(buffer.device_size), sizeof on_device,
              reinterpret_cast<uint8_t*>(&on_device));
    return on_device;
  }
  Bytes download(const DeviceBuffer& buffer) {
    const size_t size = static_cast<size_t>(length(buffer));
    Bytes out(size);
    read_back(buffer.data, size, out.data());
    return out;
  }
  // The decoders' verdict on their streams: 0 when none refused anything.
  uint32_t status() {
    uint32_t value = 0;
    if (status_) read_back(reinterpret_cast<const uint8_t*>(status_), sizeof value, reinterpret_cast<uint8_t*>(&value));
    return value;
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::vector<void*> allocations_;
  uint32_t* status_ = nullptr;
};

std::vector<ByteSpan> spans(const std::vector<Bytes>& streams) { return {streams.begin(), streams.end()}; }

size_t stream_limit(const std::vector<Bytes>& inputs) {
  size_t total = 0;
  for (const Bytes& b : inputs) total += b.size();
  return 2 * total + 65536;
}

// The same raw inputs as the CPU half: empty, tiny, ragged, real fields.
std::vector<std::pair<std::string, Bytes>> raw_inputs() {
  const Bytes wmag = testing::read_field("wmag91.float");
  const Bytes pressure = testing::read_field("pressure.384_384.f64");
  return {{"empty", {}},
          {"one byte", {0x5A}},
          {"seven bytes", testing::random_bytes(7, 1)},
          {"ragged smooth", testing::smooth_words(2 * 16384 + 13, 4, 2)},
          {"ragged random", testing::random_bytes(16384 + 3, 3)},
          {"wmag91 slice", Bytes(wmag.begin() + 4 * 91 * 91 * 40, wmag.begin() + 4 * 91 * 91 * 43 + 5)},
          {"pressure slice", Bytes(pressure.begin() + 8 * 384 * 100, pressure.begin() + 8 * 384 * 140)}};
}

TEST(StageContractOnDevice, GpuBytesEqualCpuBytesBothWays) {
  FZ_SKIP_WITHOUT_CUDA();
  auto exec = make_pool_executor(2);
  const auto raws = raw_inputs();
  for (const ListedStage& listed : listed_stages()) {
    if (!listed.has_cuda_part) continue;
    size_t forwards = 0, inverses = 0, sized_forwards = 0, outgrown = 0;
    for (const StageSample& sample : listed.samples())
      for (const auto& [raw_label, raw] : raws) {
        SCOPED_TRACE(sample.label + " on " + raw_label);
        const StageCase c = sample.make(ByteSpan(raw));
        const StageContext ctx{*exec, stream_limit(c.inputs)};
        std::vector<Bytes> cpu;
        c.stage->forward(spans(c.inputs), cpu, ctx);

        if (c.stage->has_device_forward()) {
          TestDeviceWork work;
          std::vector<DeviceBuffer> in, out;
          for (const Bytes& input : c.inputs) in.push_back(work.upload(input, false));
          c.stage->forward_device(in, out, work);
          ASSERT_EQ(out.size(), cpu.size());
          size_t input_bytes = 0;
          for (const Bytes& input : c.inputs) input_bytes += input.size();
          for (size_t k = 0; k < cpu.size(); ++k) {
            EXPECT_EQ(out[k].device_size == nullptr, c.stage->device_output_size_on_host(k)) << "output " << k;
            const uint64_t length = work.length(out[k]);
            if (out[k].device_size && out[k].capacity && length > out[k].capacity) {
              // Longer than its room, so not written (cuda::outgrew_room):
              // allowed only where the length alone exceeds the stage's
              // input, which makes the frame the raw one; the length is
              // still the CPU's.
              EXPECT_EQ(length, cpu[k].size()) << "forward output " << k << " beyond its room";
              EXPECT_GT(length, input_bytes) << "forward output " << k << " beyond its room";
              ++outgrown;
              continue;
            }
            EXPECT_TRUE(work.download(out[k]) == cpu[k]) << "forward output " << k;
          }
          ++forwards;
          // A stage that takes lengths on the device writes the same bytes
          // from them, whatever the allocation holds past the length.
          if (c.stage->device_forward_takes_device_sizes())
            for (size_t slack : {size_t{0}, size_t{1}, size_t{16384 * 3 + 5}}) {
              SCOPED_TRACE("input length on the device, slack " + std::to_string(slack));
              std::vector<DeviceBuffer> sized_in, sized_out;
              for (const Bytes& input : c.inputs) sized_in.push_back(work.upload_sized_on_device(input, slack));
              c.stage->forward_device(sized_in, sized_out, work);
              ASSERT_EQ(sized_out.size(), cpu.size());
              for (size_t k = 0; k < cpu.size(); ++k)
                EXPECT_TRUE(work.download(sized_out[k]) == cpu[k]) << "forward output " << k;
              ++sized_forwards;
            }
        }

        if (!c.stage->has_device_inverse()) continue;
        for (bool with_host_bytes : {true, false}) {
          if (!with_host_bytes && c.stage->device_inverse_reads_host_bytes()) continue;
          SCOPED_TRACE(with_host_bytes ? "streams with host bytes" : "streams on the device only");
          TestDeviceWork work;
          std::vector<DeviceBuffer> out, in;
          for (const Bytes& stream : cpu) out.push_back(work.upload(stream, with_host_bytes));
          c.stage->inverse_device(out, in, work, ctx.max_stream_bytes);
          ASSERT_EQ(in.size(), c.inputs.size());
          for (size_t i = 0; i < in.size(); ++i) EXPECT_TRUE(work.download(in[i]) == c.inputs[i]) << "input " << i;
          EXPECT_EQ(work.status(), 0u);
          ++inverses;
        }
      }
    EXPECT_GT(forwards, 0u) << listed.name << ": listed with a CUDA part, but no sample runs its GPU forward";
    EXPECT_GT(inverses, 0u) << listed.name << ": listed with a CUDA part, but no sample runs its GPU inverse";
    // Lorenzo's outliers on the samples' noise are longer than the chunk
    // (lorenzo_stage_cuda.cpp sizes their room): that case runs here.
    if (std::string(listed.name) == "lorenzo") {
      EXPECT_GT(outgrown, 0u) << "no sample's outlier stream outgrew its room";
    }
    if (std::string(listed.name) == "rze" || std::string(listed.name) == "rre") {
      EXPECT_GT(sized_forwards, 0u) << listed.name << ": takes its input's length on the device, untested";
    }
  }
}

}  // namespace
}  // namespace fz::engine
