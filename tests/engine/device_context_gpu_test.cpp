// The CUDA device context (engine/src/cuda/device_context.hpp). GPU tests:
// labelled "gpu", skipped where no CUDA device is usable (CI).
#include "cuda/device_context.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "fault_injection.hpp"

namespace fz::engine::cuda {
namespace {

int devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

#define REQUIRE_DEVICE() \
  if (devices() == 0) GTEST_SKIP() << "no CUDA device"

TEST(DeviceContext, MadeOncePerDevice) {
  REQUIRE_DEVICE();
  DeviceContext& a = DeviceContext::of(0);
  DeviceContext& b = DeviceContext::of(0);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a.device(), 0);
  EXPECT_FALSE(a.name().empty());
  EXPECT_FALSE(a.broken());
}

TEST(DeviceContext, NoSuchDeviceIsAClearError) {
  REQUIRE_DEVICE();
  try {
    DeviceContext::of(devices());
    FAIL() << "device " << devices() << " should not exist";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorInvalidDevice);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DeviceContext::of(-1), CudaError);
}

TEST(DeviceContext, LanesAreReusedAndNotShared) {
  REQUIRE_DEVICE();
  DeviceContext& context = DeviceContext::of(0);
  cudaStream_t first;
  {
    LaneLease lane = context.lease();
    first = lane->stream;
  }
  const size_t made = context.lanes_made();
  {
    LaneLease again = context.lease();
    EXPECT_EQ(again->stream, first) << "an idle lane is lent again";
    LaneLease second = context.lease();
    EXPECT_NE(second->stream, again->stream) << "two calls at once get two lanes";
  }
  EXPECT_EQ(context.lanes_made(), std::max<size_t>(made, 2));
}

// Many threads at once: each gets its own stream, moves its own bytes through
// pooled device memory and pinned staging, and gets them back intact.
TEST(DeviceContext, ConcurrentCallsFromManyThreads) {
  REQUIRE_DEVICE();
  DeviceContext& context = DeviceContext::of(0);
  constexpr int kThreads = 8, kRounds = 50;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t bytes = 1000 + 4099 * static_cast<size_t>(t + round);
        LaneLease lane = context.lease();
        uint8_t* staging = lane->staging.reserve(bytes);
        for (size_t i = 0; i < bytes; ++i) staging[i] = static_cast<uint8_t>(i * 31 + t + round);
        void* device = context.allocate(bytes, lane->stream);
        check(cudaMemcpyAsync(device, staging, bytes, cudaMemcpyHostToDevice, lane->stream), "H2D");
        check(cudaMemsetAsync(staging, 0, 0, lane->stream), "noop");
        std::vector<uint8_t> back(bytes);
        check(cudaMemcpyAsync(back.data(), device, bytes, cudaMemcpyDeviceToHost, lane->stream), "D2H");
        context.release(device, lane->stream);
        check(cudaStreamSynchronize(lane->stream), "sync");
        for (size_t i = 0; i < bytes; ++i)
          if (back[i] != static_cast<uint8_t>(i * 31 + t + round)) {
            ++failures[t];
            break;
          }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_LE(context.lanes_made(), static_cast<size_t>(kThreads) + 2) << "lanes are reused, not made per call";
}

TEST(DeviceContext, CallersCurrentDeviceIsRestored) {
  REQUIRE_DEVICE();
  const int last = devices() - 1;
  check(cudaSetDevice(last), "cudaSetDevice");
  {
    CurrentDeviceGuard guard(0);
    int now = -1;
    check(cudaGetDevice(&now), "cudaGetDevice");
    EXPECT_EQ(now, 0);
    DeviceContext::of(0).lease();
  }
  int after = -1;
  check(cudaGetDevice(&after), "cudaGetDevice");
  EXPECT_EQ(after, last);
  check(cudaSetDevice(0), "cudaSetDevice");
}

TEST(DeviceContext, AllocationFailureIsAnOrdinaryError) {
  REQUIRE_DEVICE();
  DeviceContext& context = DeviceContext::of(0);
  LaneLease lane = context.lease();
  fault_injection::device_allocation_failures = 1;
  try {
    context.allocate(1 << 20, lane->stream);
    FAIL() << "the injected failure did not happen";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
    EXPECT_FALSE(e.sticky());
  }
  EXPECT_FALSE(context.broken());
  void* p = context.allocate(1 << 20, lane->stream);  // the next one works
  context.release(p, lane->stream);
  check(cudaStreamSynchronize(lane->stream), "sync");
  // A real one: more than the device has.
  size_t free_bytes = 0, total = 0;
  check(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  EXPECT_THROW(context.allocate(total * 2, lane->stream), CudaError);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the error is cleared, not left for the next call";
}

TEST(DeviceContext, StickyErrorsAreTold) {
  EXPECT_TRUE(is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(is_sticky(cudaErrorLaunchFailure));
  EXPECT_FALSE(is_sticky(cudaErrorMemoryAllocation));
  EXPECT_FALSE(is_sticky(cudaErrorInvalidDevice));
}

}  // namespace
}  // namespace fz::engine::cuda
