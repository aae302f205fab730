// The backends' contract (docs/FORMAT.md section 0, rule 1): for every preset, mode,
// data type and real field, the GPU writes the CPU's frame bytes, and each
// backend decodes the other's frames to the same bytes. Both paths onto the
// GPU are covered: chunks in host memory (the filter's path, compress_with
// kGpu) and chunks already in device memory (compress_on_device /
// decompress_on_device). Skips without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "api_internal.hpp"
#include "common/testing/device_cuda.hpp"
#include "common/testing/test_data.hpp"
#include "engine_test_util.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {


// Device memory holding a copy of host bytes (or `size` bytes).
class DeviceBytes {
 public:
  explicit DeviceBytes(size_t size) : size_(size) {
    EXPECT_EQ(cudaMalloc(&data_, std::max<size_t>(size, 1)), cudaSuccess);
  }
  explicit DeviceBytes(const Bytes& host) : DeviceBytes(host.size()) {
    if (!host.empty()) {
      EXPECT_EQ(cudaMemcpy(data_, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* get() const { return data_; }
  size_t size() const { return size_; }
  Bytes download(size_t n) const {
    Bytes out(n);
    if (n) {
      EXPECT_EQ(cudaMemcpy(out.data(), data_, n, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }

 private:
  void* data_ = nullptr;
  size_t size_;
};

struct Field {
  std::string file;
  DataType dtype;
  std::vector<uint64_t> dims;
};

std::vector<Field> real_fields() {
  return {
      {"vorticity.128_128_41", DataType::of<float>(), {41, 128, 128}},
      {"vorticity.512_512", DataType::of<float>(), {512, 512}},
      {"wmag91.float", DataType::of<float>(), {91, 91, 91}},
      {"999x999.float", DataType::of<float>(), {999, 999}},
      {"const32x32x59.float", DataType::of<float>(), {59, 32, 32}},
      {"pressure.384_384.f64", DataType::of<double>(), {384, 384}},
  };
}

struct Setting {
  Preset preset;
  ErrorMode mode;
  double bound;
};

std::vector<Setting> settings() {
  std::vector<Setting> s = {{Preset::Lossless, ErrorMode::Abs, 0}};
  for (double noa : {1e-2, 1e-4}) {
    s.push_back({Preset::Pfpl, ErrorMode::Noa, noa});
    s.push_back({Preset::Fzgpu, ErrorMode::Noa, noa});
    s.push_back({Preset::Cusz, ErrorMode::Noa, noa});
  }
  for (double rel : {1e-2, 1e-4}) s.push_back({Preset::Pfpl, ErrorMode::Rel, rel});
  // ABS bounds are scaled to each field's range below.
  for (double abs_fraction : {1e-3}) {
    s.push_back({Preset::Pfpl, ErrorMode::Abs, abs_fraction});
    s.push_back({Preset::Fzgpu, ErrorMode::Abs, abs_fraction});
    s.push_back({Preset::Cusz, ErrorMode::Abs, abs_fraction});
  }
  return s;
}

double value_range(const Bytes& bytes, const DataType& dtype) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i + dtype.size <= bytes.size(); i += dtype.size) {
    double v;
    if (dtype.size == 4) {
      float f;
      std::memcpy(&f, bytes.data() + i, 4);
      v = f;
    } else {
      std::memcpy(&v, bytes.data() + i, 8);
    }
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  return hi > lo ? hi - lo : 1.0;
}

Options options_for(const Setting& s, const Bytes& data, const DataType& dtype) {
  Options o;
  o.preset = s.preset;
  o.mode = s.mode;
  o.bound = s.mode == ErrorMode::Abs && s.bound > 0 ? s.bound * value_range(data, dtype) : s.bound;
  return o;
}

std::string label(const std::string& name, const Setting& s) {
  return name + " " + preset_name(s.preset) + " " + mode_name(s.mode) + " " + std::to_string(s.bound);
}

// Everything the contract says, for one chunk: frames equal on both GPU paths,
// and every decoder (CPU, GPU from host memory, GPU from device memory) gives
// the CPU's decoded bytes from either backend's frame.
void expect_backends_agree(const Bytes& data, const DataType& dtype, const std::vector<uint64_t>& dims,
                           const Options& options, const std::string& what) {
  const Bytes cpu = compress_with(data.data(), data.size(), dtype, dims, options, BackendUse::kCpu);
  const Bytes gpu = compress_with(data.data(), data.size(), dtype, dims, options, BackendUse::kGpu);
  ASSERT_EQ(gpu, cpu) << what << ": the GPU's frame (host chunk) differs from the CPU's";

  DeviceBytes d_data(data);
  DeviceBytes d_frame(max_frame_bytes(data.size(), dims.size()));
  const size_t n = compress_on_device(d_data.get(), data.size(), dtype, dims, options, d_frame.get(), d_frame.size());
  ASSERT_EQ(d_frame.download(n), cpu) << what << ": the device-resident frame differs from the CPU's";

  Bytes expected(data.size());
  ASSERT_EQ(decompress_into_on(cpu.data(), cpu.size(), expected.data(), expected.size(), 0, BackendUse::kCpu),
            data.size());
  Bytes from_gpu(data.size() + 1);
  ASSERT_EQ(decompress_into_on(cpu.data(), cpu.size(), from_gpu.data(), from_gpu.size(), 0, BackendUse::kGpu),
            data.size());
  from_gpu.resize(data.size());
  EXPECT_EQ(from_gpu, expected) << what << ": GPU decode (host frame) differs";

  DeviceBytes d_out(data.size() + 16);
  const size_t m = decompress_on_device(d_frame.get(), n, d_out.get(), d_out.size());
  ASSERT_EQ(m, data.size()) << what;
  EXPECT_EQ(d_out.download(m), expected) << what << ": GPU decode (device frame) differs";
  if (!preset_is_lossy(options.preset)) {
    EXPECT_EQ(expected, data) << what << ": lossless is not exact";
  }
}

TEST(BackendIdentity, EveryPresetModeAndRealField) {
  FZ_SKIP_WITHOUT_CUDA();
  for (const Field& f : real_fields()) {
    const Bytes data = testing::read_field(f.file);
    for (const Setting& s : settings()) {
      SCOPED_TRACE(label(f.file, s));
      expect_backends_agree(data, f.dtype, f.dims, options_for(s, data, f.dtype), label(f.file, s));
      if (HasFatalFailure()) return;
    }
  }
}

// Big-endian floats (byte swap first), a fill value inside the chunk (fill
// mask), NaN/inf/-0/denormals, and h5py-sized chunks with ragged shapes.
TEST(BackendIdentity, ByteOrderFillAndSpecials) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes wmag = testing::read_field("wmag91.float");
  DataType big = DataType::of<float>();
  big.order = ByteOrder::Big;
  const Bytes swapped = test::reversed_words(wmag, 4);
  Bytes with_fill = wmag;
  const float fill = -1e34f;
  for (size_t i = 0; i < with_fill.size() / 4; i += 7) std::memcpy(with_fill.data() + 4 * i, &fill, 4);
  Bytes specials = wmag;
  const float odd[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -1e-42f};
  for (size_t i = 0; i < specials.size() / 4; i += 997) std::memcpy(specials.data() + 4 * i, &odd[i % 6], 4);
  for (const Setting& s : settings()) {
    Options o = options_for(s, wmag, DataType::of<float>());
    expect_backends_agree(swapped, big, {91, 91, 91}, o, label("wmag91 big-endian", s));
    Options filled = o;
    filled.fill_value.resize(4);
    std::memcpy(filled.fill_value.data(), &fill, 4);
    expect_backends_agree(with_fill, DataType::of<float>(), {91, 91, 91}, filled, label("wmag91 with fill", s));
    // HDF5's fill value and a missing value in one chunk (two FILLMASK
    // stages), each alone, and the missing value absent (issue 28 item 1).
    Options both = filled;
    const float missing = -999.0f;
    both.missing_value.resize(4);
    std::memcpy(both.missing_value.data(), &missing, 4);
    Bytes with_both = with_fill;
    for (size_t i = 3; i < with_both.size() / 8; i += 5) std::memcpy(with_both.data() + 4 * i, &missing, 4);
    expect_backends_agree(with_both, DataType::of<float>(), {91, 91, 91}, both, label("wmag91 fill and missing", s));
    expect_backends_agree(with_fill, DataType::of<float>(), {91, 91, 91}, both, label("wmag91 fill, no missing", s));
    Options missing_only = o;
    missing_only.missing_value = both.missing_value;
    expect_backends_agree(with_both, DataType::of<float>(), {91, 91, 91}, missing_only,
                          label("wmag91 missing only", s));
    expect_backends_agree(specials, DataType::of<float>(), {91, 91, 91}, o, label("wmag91 with specials", s));
    // A small ragged chunk, as HDF5 hands edge chunks over.
    const Bytes slab(wmag.begin(), wmag.begin() + 4 * 7 * 23 * 11);
    expect_backends_agree(slab, DataType::of<float>(), {7, 23, 11}, o, label("7x23x11 slab", s));
    if (HasFatalFailure()) return;
  }
}

// The lossless preset on every integer width, an odd-sized compound and empty chunks.
TEST(BackendIdentity, LosslessTypes) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes noise = testing::random_bytes(1 << 20, 7);
  const Bytes smooth = testing::smooth_words(1 << 18, 4, 3);
  const std::vector<DataType> types = {DataType::of<uint8_t>(), DataType::of<int16_t>(), DataType::of<int32_t>(),
                                       DataType::of<uint64_t>(), {ElementClass::Opaque, 12, ByteOrder::Little},
                                       {ElementClass::Signed, 4, ByteOrder::Big}};
  for (const DataType& t : types)
    for (const Bytes* data : {&noise, &smooth}) {
      const size_t n = data->size() / t.size;
      const Bytes chunk(data->begin(), data->begin() + n * t.size);
      expect_backends_agree(chunk, t, {n}, Options{}, "lossless size " + std::to_string(t.size));
    }
  expect_backends_agree(Bytes{}, DataType::of<float>(), {0}, Options{}, "empty chunk");
}

TEST(DeviceApi, RefusesWhatItCannotDo) {
  FZ_SKIP_WITHOUT_CUDA();
  const Bytes data = testing::read_field("wmag91.float");
  DeviceBytes d_data(data);
  DeviceBytes d_frame(max_frame_bytes(data.size(), 3));
  // Host memory where device memory is expected.
  EXPECT_THROW(compress_on_device(data.data(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{},
                                  d_frame.get(), d_frame.size()),
               Error);
  Bytes host_frame(d_frame.size());
  EXPECT_THROW(compress_on_device(d_data.get(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{},
                                  host_frame.data(), host_frame.size()),
               Error);
  // A frame buffer too small says so.
  try {
    compress_on_device(d_data.get(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{}, d_frame.get(), 100);
    FAIL() << "a 100-byte frame buffer was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_frame_bytes"), std::string::npos) << e.what();
  }
  // A corrupted frame is refused with the CRC named; a decoded size above the capacity too.
  const size_t n = compress_on_device(d_data.get(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{},
                                      d_frame.get(), d_frame.size());
  Bytes frame = d_frame.download(n);
  DeviceBytes d_out(data.size());
  EXPECT_THROW(decompress_on_device(d_frame.get(), n, d_out.get(), data.size() - 1), Error);
  frame[frame.size() - 10] ^= 0x04;
  DeviceBytes d_bad(frame);
  try {
    decompress_on_device(d_bad.get(), frame.size(), d_out.get(), d_out.size());
    FAIL() << "a corrupted frame was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  // Resealed (the CRCs match again): the stream itself is malformed or decodes
  // to other bytes; it must not crash, and an accepted frame decodes as the CPU does.
  test::reseal(frame);
  DeviceBytes d_resealed(frame);
  Bytes cpu(data.size());
  bool cpu_ok = true;
  try {
    decompress_into_on(frame.data(), frame.size(), cpu.data(), cpu.size(), 0, BackendUse::kCpu);
  } catch (const Error&) {
    cpu_ok = false;
  }
  bool gpu_ok = true;
  try {
    decompress_on_device(d_resealed.get(), frame.size(), d_out.get(), d_out.size());
  } catch (const Error&) {
    gpu_ok = false;
  }
  EXPECT_EQ(gpu_ok, cpu_ok);
  if (gpu_ok && cpu_ok) {
    EXPECT_EQ(d_out.download(data.size()), cpu);
  }
}

// wmag91 cut into slabs of 1, 7, 30, 2, 40 and 11 planes: as ragged as
// HDF5's edge chunks, and more of them than chunks in flight.
constexpr size_t kWmagPlane = 91 * 91 * 4;
std::vector<Bytes> ragged_slabs(const Bytes& field) {
  std::vector<Bytes> slabs;
  size_t z = 0;
  for (size_t thickness : {1, 7, 30, 2, 40, 11}) {
    slabs.emplace_back(field.begin() + z * kWmagPlane, field.begin() + (z + thickness) * kWmagPlane);
    z += thickness;
  }
  return slabs;
}

// The batch paths' cases: body(slabs, setting, options) for settings() and
// the spline presets (NOA 1e-3) on wmag91's ragged slabs, each traced.
template <typename Body>
void for_each_batch_case(Body body) {
  const Bytes field = testing::read_field("wmag91.float");
  const std::vector<Bytes> slabs = ragged_slabs(field);
  std::vector<Setting> all = settings();
  all.push_back({Preset::CuszHiTp, ErrorMode::Noa, 1e-3});
  all.push_back({Preset::CuszHiCr, ErrorMode::Noa, 1e-3});
  for (const Setting& s : all) {
    SCOPED_TRACE(label("wmag91 slabs", s));
    body(slabs, s, options_for(s, field, DataType::of<float>()));
  }
}

// decompress_batch_to_device (h5fz.read(device="cuda")): frames in host
// memory decoded into device buffers give the CPU's bytes for every preset,
// the spline presets included, in slabs as ragged as HDF5's edge chunks; a
// bad frame is named by index after the others are decoded, and host memory
// as an output is refused.
TEST(DecompressBatchToDevice, MatchesTheCpuAndNamesABadFrame) {
  FZ_SKIP_WITHOUT_CUDA();
  for_each_batch_case([](const std::vector<Bytes>& slabs, const Setting& s, const Options& options) {
    std::vector<Bytes> frames, expected;
    std::vector<std::unique_ptr<DeviceBytes>> outputs;
    std::vector<FrameView> views;
    for (const Bytes& slab : slabs) {
      frames.push_back(compress_with(slab.data(), slab.size(), DataType::of<float>(),
                                     {slab.size() / kWmagPlane, 91, 91}, options, BackendUse::kCpu));
      Bytes decoded(slab.size());
      decompress_into_on(frames.back().data(), frames.back().size(), decoded.data(), decoded.size(), 0,
                         BackendUse::kCpu);
      expected.push_back(decoded);
      outputs.push_back(std::make_unique<DeviceBytes>(slab.size()));
    }
    for (size_t i = 0; i < frames.size(); ++i)
      views.push_back({frames[i].data(), frames[i].size(), outputs[i]->get(), outputs[i]->size()});
    const std::vector<size_t> lengths = decompress_batch_to_device(views);
    for (size_t i = 0; i < frames.size(); ++i) {
      ASSERT_EQ(lengths[i], expected[i].size());
      EXPECT_EQ(outputs[i]->download(lengths[i]), expected[i]) << "slab " << i;
    }
    if (s.preset != Preset::Cusz) return;
    // One corrupted frame: named, and every other frame still decoded.
    Bytes bad = frames[2];
    bad[bad.size() / 2] ^= 0x10;
    views[2].frame = bad.data();
    for (auto& out : outputs) ASSERT_EQ(cudaMemset(out->get(), 0, out->size()), cudaSuccess);
    try {
      decompress_batch_to_device(views);
      FAIL() << "a corrupted frame was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("frame 2"), std::string::npos) << e.what();
    }
    EXPECT_EQ(outputs[4]->download(expected[4].size()), expected[4]);
    Bytes host(expected[0].size());
    EXPECT_THROW(decompress_batch_to_device({{frames[0].data(), frames[0].size(), host.data(), host.size()}}), Error);
  });
}

// compress_batch_from_device (h5fz.write of a GPU array): chunks in device
// memory give, frame for frame, the CPU's compress_batch frames for every
// preset, the spline presets included, in slabs as ragged as HDF5's edge
// chunks, more of them than chunks in flight (the frame rooms are reused);
// a chunk in host memory among them is refused, named by index.
TEST(CompressBatchFromDevice, GivesTheCpusFrames) {
  FZ_SKIP_WITHOUT_CUDA();
  for_each_batch_case([](const std::vector<Bytes>& slabs, const Setting& s, const Options& options) {
    std::vector<std::unique_ptr<DeviceBytes>> on_device;
    std::vector<ChunkView> host_views, device_views;
    for (size_t i = 0; i < slabs.size(); ++i) {
      const std::vector<uint64_t> dims = {slabs[i].size() / kWmagPlane, 91, 91};
      on_device.push_back(std::make_unique<DeviceBytes>(slabs[i]));
      host_views.push_back({slabs[i].data(), slabs[i].size(), dims});
      device_views.push_back({on_device.back()->get(), slabs[i].size(), dims});
    }
    Options on_cpu = options;
    on_cpu.device = "cpu";
    const std::vector<Bytes> expected = compress_batch(host_views, DataType::of<float>(), on_cpu);
    const std::vector<Bytes> got = compress_batch_from_device(device_views, DataType::of<float>(), options);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "slab " << i;
    // The same frames straight into the caller's rooms, page-locked or not,
    // nothing written past a frame.
    for (const bool pinned : {false, true}) {
      std::vector<size_t> capacities;
      size_t total = 0;
      for (const ChunkView& v : device_views) {
        capacities.push_back(max_frame_bytes(v.bytes, v.dims.size()) + 64);
        total += capacities.back();
      }
      uint8_t* memory = nullptr;
      std::vector<uint8_t> pageable;
      if (pinned) {
        ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&memory), total, cudaHostAllocDefault), cudaSuccess);
      } else {
        pageable.resize(total);
        memory = pageable.data();
      }
      std::memset(memory, 0xEE, total);
      std::vector<FrameRoom> rooms;
      for (size_t i = 0, at = 0; i < capacities.size(); at += capacities[i], ++i)
        rooms.push_back({memory + at, capacities[i] - 64});
      const std::vector<size_t> lengths =
          compress_batch_from_device_into(device_views, DataType::of<float>(), options, rooms);
      ASSERT_EQ(lengths.size(), expected.size());
      for (size_t i = 0; i < lengths.size(); ++i) {
        const auto* room = static_cast<const uint8_t*>(rooms[i].data);
        EXPECT_EQ(Bytes(room, room + lengths[i]), expected[i]) << "slab " << i << (pinned ? ", pinned" : "");
        for (size_t k = lengths[i]; k < capacities[i]; ++k) ASSERT_EQ(room[k], 0xEE) << "slab " << i;
      }
      if (pinned) {
        // A room one byte short of its frame is named; the others are written.
        std::vector<FrameRoom> small = rooms;
        small[1].capacity = expected[1].size() - 1;
        try {
          compress_batch_from_device_into(device_views, DataType::of<float>(), options, small);
          ADD_FAILURE() << "a frame larger than its room was accepted";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("chunk 1"), std::string::npos) << e.what();
        }
        (void)cudaFreeHost(memory);
      }
    }
    if (s.preset != Preset::Fzgpu) return;
    std::vector<ChunkView> mixed = device_views;
    mixed[3] = host_views[3];
    try {
      compress_batch_from_device(mixed, DataType::of<float>(), options);
      FAIL() << "a chunk in host memory was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("chunk 3"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace fz
