#include "pipeline_cache.hpp"

#include <list>
#include <mutex>
#include <utility>

#include "presets/presets.hpp"

namespace fz::engine {
namespace {

// The kCachedPipelines most recently asked for, most recent first. Sixteen
// keys are compared in well under a microsecond; a map would not pay.
class RecentPipelines {
 public:
  template <typename Build>
  std::shared_ptr<const Pipeline> get(std::string key, Build build) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto found = find_and_promote(key)) return found;
    }
    // Built outside the lock, so other callers wait for no build but their
    // own; building may throw, and then nothing is kept.
    auto built = std::make_shared<const Pipeline>(build());
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = find_and_promote(key)) return found;  // another thread built it meanwhile
    entries_.emplace_front(std::move(key), built);
    if (entries_.size() > kCachedPipelines) entries_.pop_back();
    return built;
  }

 private:
  std::shared_ptr<const Pipeline> find_and_promote(const std::string& key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->second;
      }
    return nullptr;
  }

  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const Pipeline>>> entries_;
};

// Leaked on purpose, like the thread pool: a plugin unloaded at exit may still
// be decoding on another thread while static destructors run.
RecentPipelines& frame_pipelines() {
  static auto* cache = new RecentPipelines();
  return *cache;
}
RecentPipelines& forward_pipelines() {
  static auto* cache = new RecentPipelines();
  return *cache;
}

// Appends fixed-size values and length-prefixed sequences, so that two
// different descriptions never give the same key.
class KeyWriter {
 public:
  template <typename T>
  void put(const T& value) {
    key_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  template <typename Sequence>
  void put_all(const Sequence& values) {
    put(uint64_t{values.size()});
    for (const auto& v : values) put(v);
  }
  std::string take() { return std::move(key_); }

 private:
  std::string key_;
};

}  // namespace

std::shared_ptr<const Pipeline> cached_pipeline_of_stages(const std::vector<StageInfo>& stages) {
  KeyWriter key;
  key.put(uint64_t{stages.size()});
  for (const StageInfo& s : stages) {  // the name is derived from the type id
    key.put(s.type_id);
    key.put_all(s.config);
    key.put_all(s.inputs);
    key.put(s.outputs);
  }
  return frame_pipelines().get(key.take(), [&] { return pipeline_of_stages(stages); });
}

std::string forward_pipeline_key(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const FiniteRange& values) {
  KeyWriter key;
  key.put(static_cast<uint32_t>(dtype.element_class));
  key.put(dtype.size);
  key.put(static_cast<uint32_t>(dtype.order));
  key.put_all(dims);
  key.put(static_cast<uint32_t>(options.preset));
  key.put(static_cast<uint32_t>(options.mode));
  key.put(options.bound);
  key.put_all(options.fill_value);
  key.put_all(options.missing_value);
  // Presets 5 and 6 build their spline stage from these (cuszhi.cpp).
  key.put(static_cast<uint32_t>(options.spline_tuning));
  key.put(options.spline_alpha);
  key.put(options.spline_beta);
  key.put(values.any);
  key.put(values.min);
  key.put(values.max);
  key.put(values.has_fill);
  key.put(values.has_missing);
  key.put(values.lorenzo);  // cuszhi-cr's predictor (presets/predictor_choice.hpp)
  key.put(values.fold);
  return key.take();
}

std::shared_ptr<const Pipeline> cached_forward_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims,
                                                        const Options& options, const FiniteRange& values) {
  return forward_pipelines().get(forward_pipeline_key(dtype, dims, options, values),
                                 [&] { return build_pipeline_from_range(dtype, dims, options, values); });
}

}  // namespace fz::engine
