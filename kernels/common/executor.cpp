#include "common/executor.hpp"

namespace fz {
namespace {

class SerialExecutor final : public Executor {
 public:
  void parallel_for(size_t count, const std::function<void(size_t)>& body) const override {
    for (size_t i = 0; i < count; ++i) body(i);
  }
  unsigned concurrency() const override { return 1; }
};

}  // namespace

const Executor& serial_executor() {
  static const SerialExecutor instance;
  return instance;
}

}  // namespace fz
