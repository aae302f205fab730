// The file-level fuzz harness (h5file_harness.hpp) over a fixed set of cases,
// for ctest and the ASan build, which have no libFuzzer: every dataset (its
// first chunk and its last, an edge chunk where the shape is ragged) x a
// frame from every dataset x a list of header mutations (decoded size -1, +1,
// x2, /2, 1, 0; element size, class and byte order changed; raw frames of the
// target's size in another dtype; truncations; byte edits with the CRCs
// recomputed). Exits non-zero on any violation; ASan aborts on an over-read.
//
//   h5file_replay [--quick]   (--quick: the first chunk of each dataset only)
#include <cstdio>
#include <cstring>
#include <vector>

#include "h5file_harness.hpp"

using fz::h5file::Case;
using fz::h5file::Forge;

namespace {

std::vector<Case> mutations() {
  std::vector<Case> list;
  auto forged = [&](Forge f) {
    Case c;
    c.kind = Case::Kind::Forged;
    c.forge = f;
    list.push_back(c);
  };
  list.push_back(Case{});  // the frame as it is
  for (bool raw : {true, false}) {
    for (Forge::Size size : {Forge::Size::MinusOne, Forge::Size::PlusOne, Forge::Size::Double, Forge::Size::Half,
                             Forge::Size::Tiny, Forge::Size::Zero, Forge::Size::Target}) {
      Forge f;
      f.raw = raw;
      f.size = size;
      forged(f);
    }
  }
  Forge f;
  f.raw = true;
  f.size = Forge::Size::Target;
  f.element_size = 1;  // the target's bytes as 1-byte elements
  forged(f);
  f.element_class = 0;  // ... and as opaque bytes (the engine's bytes type)
  forged(f);
  f = Forge{};
  f.element_size = 3;  // element size changed, size kept
  forged(f);
  f = Forge{};
  f.element_class = 3;  // called a float
  forged(f);
  f.element_class = 0;  // called opaque
  forged(f);
  f = Forge{};
  f.byte_order = 1;  // byte order flipped
  forged(f);
  f = Forge{};
  f.preset = 4;  // another preset named
  forged(f);
  f = Forge{};
  f.truncate_by = 1;
  forged(f);
  Case edit;
  edit.kind = Case::Kind::Edited;  // a payload byte changed, CRCs recomputed
  edit.edits = {{40, 0x10}, {41, 0x01}};
  list.push_back(edit);
  Case cut;
  cut.kind = Case::Kind::Truncated;
  cut.truncate_to = 20;
  list.push_back(cut);
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  fz::h5file::Harness& harness = fz::h5file::Harness::instance();
  harness.self_check();
  const std::vector<Case> list = mutations();
  size_t cases = 0, skipped = 0, reads_ok = 0, violations = 0;
  for (size_t t = 0; t < harness.dataset_count(); ++t) {
    const fz::h5file::Dataset& target = harness.dataset(t);
    std::vector<size_t> chunks{0};
    if (!quick && target.frames.size() > 1) chunks.push_back(target.frames.size() - 1);
    for (size_t chunk : chunks) {
      for (size_t s = 0; s < harness.dataset_count(); ++s) {
        const fz::h5file::Dataset& source = harness.dataset(s);
        // The source's last chunk: an edge chunk where its shape is ragged.
        const size_t source_chunk = (t + s) % 2 == 0 ? 0 : source.frames.size() - 1;
        for (Case c : list) {
          c.target = t;
          c.target_chunk = chunk;
          c.source = {s, source_chunk};
          for (int d = 0; d < target.spec.rank; ++d) {
            c.slab_start_in_chunk[d] = target.spec.chunk[d] / 2;
            c.slab_count[d] = target.spec.chunk[d];
          }
          const fz::h5file::Outcome outcome = harness.run(c);
          ++cases;
          skipped += outcome.skipped;
          reads_ok += outcome.whole_ok;
          if (outcome.violation) {
            if (++violations <= 20) std::fprintf(stderr, "VIOLATION: %s\n", outcome.message.c_str());
          }
        }
      }
    }
  }
  std::printf("h5file_replay: %zu datasets, %zu frames, %zu cases (%zu not storable), %zu whole reads succeeded, %zu violations\n",
              harness.dataset_count(), harness.frame_count(), cases, skipped, reads_ok, violations);
  return violations == 0 ? 0 : 1;
}
