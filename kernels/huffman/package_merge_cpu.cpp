// Package-merge on the host, for the Huffman code lengths where an ordinary
// Huffman code exceeds the length limit (huffman/huffman.hpp states the
// method; lengths_cpu.cpp decides when it runs). Two forms that make exactly
// the documented selection with less work, by items (package_merge_items)
// and by runs of equal weight (package_merge_runs), and the choice between
// them. Split from lengths_cpu.cpp, which keeps the sort and the plain
// Huffman code: this is the slow, rare path and most of the subtle code;
// huffman_test checks it against a plain reference.
#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#include "huffman/huffman.hpp"
#include "huffman/lengths_cpu.hpp"

namespace fz::huffman {
namespace {

using detail::at_least;
using detail::Scratch;
using detail::SortedLeaves;

// The selection walk shared by both package-merge forms: lists 1..top-1
// select every leaf; from list `top` down, list j selects `take` items of
// which leaves_among(j, take) are leaves (always the first ones in (count,
// symbol) order), and the next list 2 (take - leaves) items. Leaf k's length
// is the number of lists selecting more than k leaves.
template <typename LeavesAmong>
void lengths_from_selection(size_t m, unsigned top, unsigned depth, const std::array<size_t, kMaxLengthLimit + 1>& list_size,
                            LeavesAmong&& leaves_among, const uint32_t* leaves, std::vector<uint8_t>& lengths,
                            Scratch& scratch) {
  uint32_t* const ends = at_least(scratch.ends, m + 1);  // ends[c]: the lists selecting exactly the first c leaves
  std::fill(ends, ends + m + 1, 0u);
  ends[m] += top - 1;
  size_t take = 2 * m - (size_t{2} << (top - 1));
  for (unsigned j = top; j <= depth; ++j) {
    if (take > list_size[j]) throw std::logic_error("package-merge selection overran a list");
    const size_t leaves_here = leaves_among(j, take);
    ++ends[leaves_here];
    take = 2 * (take - leaves_here);
  }
  if (take != 0) throw std::logic_error("package-merge selection left packages in the last list");
  uint32_t length = 0;
  for (size_t k = m; k-- > 0;) {
    length += ends[k + 1];
    lengths[leaves[k]] = static_cast<uint8_t>(length);
  }
}

// Package-merge (see huffman.hpp) on m >= 2 sorted leaves: sets each leaf's
// length in `lengths` (all zero on entry). The selection it makes is exactly
// the one the documented procedure makes; three things make it cheaper than
// building every list in full:
//
// * Lists are built bottom-up (list D, the leaves, first). The walk reads a
//   list only through "how many leaves lie among its first take_j items".
//   Suppose lists 1..j0 each select all m leaves: then take_1 = 2m-2 and
//   take_{j+1} = 2 (take_j - m) give take_j = 2m - 2^j, and the items of list
//   j past take_j are all packages, package take_j - m + r being the sum of
//   items take_{j+1} + 2r, +1 of list j+1. So, by induction, item take_j + r
//   of list j is the sum of 2^(j0+1-j) consecutive items of list j0+1 from
//   position t = take_{j0+1} = 2m - 2^(j0+1). List j selects all leaves iff
//   its package take_j - m is missing or not lighter than the heaviest leaf
//   (a leaf precedes a package of equal weight); those packages are sums of
//   ever longer runs of the same ascending positive items, so list j0's
//   condition (items t and t+1 of list j0+1, or a missing item) implies every
//   list's above it. Hence once list j0+1 is built and that one test passes
//   (with 2^j0 <= m), lists 1..j0 need not be built: every leaf is selected
//   in each of them, and the walk starts at list j0+1 with take = t. For a
//   broad histogram (shortest code 8 or more) this skips half the lists.
// * Each list is merged as several independent segments (split points found
//   by binary search: the standard merge path), interleaved in one loop so
//   that the load-compare-select chains of the segments overlap.
// * Per-thread scratch buffers, no allocation per call; lengths by a
//   difference array over the leaves instead of one increment per selection.
//
// The merge takes a leaf while one is left and not heavier than the next
// package ("leaf <= package"), an exhausted side reading as a sentinel heavier
// than any item (the weights sum to less than 2^64 - 1), without branches.
void package_merge_items(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths, Scratch& scratch) {
  const uint32_t* const leaves = sorted.symbols;
  const size_t m = sorted.m;
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(max_length, m - 1));
  constexpr uint64_t kHeavier = ~uint64_t{0};
  uint64_t* const leaf = sorted.weights;  // leaves, then the sentinel
  leaf[m] = kHeavier;
  const uint64_t heaviest_leaf = leaf[m - 1];

  // Buffers: packages + sentinel, the current list's weights (at most 2m - 1
  // items), and the merge order (1 = leaf) of every list built, at most
  // 2m - 1 bytes each.
  uint64_t* const package = at_least(scratch.words, (m + 1) + 2 * m);
  uint64_t* const weight = package + (m + 1);
  std::copy(leaf, leaf + m, weight);  // list[depth]
  std::array<size_t, kMaxLengthLimit + 1> order_at{};  // list j's order at scratch.order[order_at[j]]
  std::array<size_t, kMaxLengthLimit + 1> list_size{};
  list_size[depth] = m;
  size_t order_used = 0;

  // Lists 1..j0 need not be built when list j0+1 (in `weight`) passes the test above.
  const auto skips_above = [&](unsigned j0) {
    if (j0 == 0 || j0 >= 63 || (size_t{1} << j0) > m) return false;
    const size_t t = 2 * m - (size_t{2} << j0);
    const size_t size = list_size[j0 + 1];
    if (t > size) return false;  // cannot happen for a valid selection; build the list instead
    return size - t < 2 || weight[t] + weight[t + 1] >= heaviest_leaf;
  };

  unsigned top = depth;  // the lowest list built
  while (top > 1 && !skips_above(top - 1)) {
    const unsigned j = top - 1;
    const size_t packages = list_size[j + 1] / 2;
    const size_t total = m + packages;
    for (size_t p = 0; p < packages; ++p) package[p] = weight[2 * p] + weight[2 * p + 1];
    package[packages] = kHeavier;
    order_at[j] = order_used;
    order_used += total;
    uint8_t* const order = at_least(scratch.order, order_used) + order_at[j];
    list_size[j] = total;
    // Segment k of K writes items [k * len, (k + 1) * len), the last one also
    // the remainder; segment k starts with the leaves that the merge puts
    // before item k * len. A segment's state is its leaves taken, a[k]: at
    // item o it has taken o - a[k] packages, so the only data-dependent update
    // is a[k] += take_leaf (an add of a flag, not a branch).
    constexpr size_t K = 4;
    const size_t len = total >= 64 * K ? total / K : 0;
    size_t a[K];
    a[0] = 0;
    for (size_t k = 1; k < K; ++k) {
      const size_t d = k * len;
      size_t lo = d > packages ? d - packages : 0, hi = std::min(d, m);
      while (lo < hi) {  // leaves before item d: leaf mid is among them iff leaf[mid] <= package[d - mid - 1]
        const size_t mid = lo + (hi - lo) / 2;
        if (leaf[mid] <= package[d - mid - 1]) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      a[k] = lo;
    }
    // List j overwrites list j + 1, whose packages are in `package`. The
    // choice is a mask, not a branch: about half the steps take either side.
    const auto step = [leaf, package, weight, order](size_t& taken, size_t at) {
      const uint64_t lw = leaf[taken], pw = package[at - taken];
      const uint64_t take_leaf = uint64_t{0} - static_cast<uint64_t>(lw <= pw);  // all ones or zero
      weight[at] = pw ^ ((lw ^ pw) & take_leaf);
      order[at] = static_cast<uint8_t>(take_leaf & 1);
      taken -= take_leaf;
    };
    static_assert(K == 4, "the loop below runs four segments");
    size_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    for (size_t at = 0; at < len; ++at) {
      step(a0, at);
      step(a1, at + len);
      step(a2, at + 2 * len);
      step(a3, at + 3 * len);
    }
    size_t al = len == 0 ? 0 : a3;  // the last segment goes on to the end
    for (size_t at = K * len; at < total; ++at) step(al, at);
    top = j;
  }

  // Walk the selection from list `top`: in lists 1..top-1 every leaf is
  // selected; the leaves selected in a list are always the first ones in
  // (count, symbol) order.
  lengths_from_selection(
      m, top, depth, list_size,
      [&](unsigned j, size_t take) {
        if (j == depth) return take;  // the deepest list is the leaves alone
        const uint8_t* const order = scratch.order.data() + order_at[j];
        return static_cast<size_t>(std::count(order, order + take, uint8_t{1}));
      },
      leaves, lengths, scratch);
}

// The same selection with every list held as runs of equal weight and kind
// (leaves or packages), merged run by run: a run of leaves goes before a run
// of packages of equal or greater weight, so whole runs move at once; pairs
// inside a run of weight w make a run of packages of weight 2w, and a pair
// straddling two runs one package. Real histograms have long runs at their
// light end (thousands of symbols with counts 1, 2, 3, which is also where
// the limit binds), and there this does a fraction of the per-item work.
void package_merge_runs(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths, Scratch& scratch) {
  using Run = Scratch::Run;
  const uint32_t* const leaves = sorted.symbols;
  const uint64_t* const leaf = sorted.weights;
  const size_t m = sorted.m;
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(max_length, m - 1));
  const uint64_t heaviest_leaf = leaf[m - 1];
  std::vector<Run>& store = scratch.runs;  // list D's runs (the leaves), then each list built
  std::vector<Run>& package = scratch.package_runs;
  store.clear();
  for (size_t k = 0; k < m; ++k) {
    if (!store.empty() && store.back().weight == leaf[k]) {
      ++store.back().count;
    } else {
      store.push_back(Run{leaf[k], 1, 1});
    }
  }
  const size_t leaf_runs = store.size();
  std::array<size_t, kMaxLengthLimit + 1> list_size{};
  std::array<size_t, kMaxLengthLimit + 1> run_begin{}, run_end{};  // list j's runs: store[run_begin[j], run_end[j])
  run_begin[depth] = 0;
  run_end[depth] = leaf_runs;
  list_size[depth] = m;

  // Items t and t + 1 of list j0+1: the test for skipping lists 1..j0 (see package_merge_items).
  const auto skips_above = [&](unsigned j0) {
    if (j0 == 0 || (size_t{1} << j0) > m) return false;
    const size_t t = 2 * m - (size_t{2} << j0);
    const size_t size = list_size[j0 + 1];
    if (t > size) return false;
    if (size - t < 2) return true;
    uint64_t item[2] = {0, 0};
    size_t position = 0;
    int found = 0;
    for (size_t r = run_begin[j0 + 1]; r < run_end[j0 + 1] && found < 2; ++r) {
      const size_t end = position + store[r].count;
      while (found < 2 && t + static_cast<size_t>(found) < end) item[found++] = store[r].weight;
      position = end;
    }
    return item[0] + item[1] >= heaviest_leaf;
  };

  unsigned top = depth;
  while (top > 1 && !skips_above(top - 1)) {
    const unsigned j = top - 1;
    // Packages of list j + 1.
    package.clear();
    const auto add_packages = [&package](uint64_t weight, uint32_t count) {
      if (!package.empty() && package.back().weight == weight) {
        package.back().count += count;
      } else {
        package.push_back(Run{weight, count, 0});
      }
    };
    bool pending = false;
    uint64_t pending_weight = 0;
    for (size_t r = run_begin[j + 1]; r < run_end[j + 1]; ++r) {
      const uint64_t w = store[r].weight;
      uint32_t c = store[r].count;
      if (pending) {
        add_packages(pending_weight + w, 1);
        --c;
        pending = false;
      }
      if (c >= 2) add_packages(2 * w, c / 2);
      if (c % 2 != 0) {
        pending = true;
        pending_weight = w;
      }
    }
    // Merge with the leaf runs (store[0, leaf_runs)), appending list j to the store.
    run_begin[j] = store.size();
    store.reserve(store.size() + leaf_runs + package.size());
    size_t i = 0, p = 0;
    while (i < leaf_runs || p < package.size()) {
      if (p == package.size() || (i < leaf_runs && store[i].weight <= package[p].weight)) {
        store.push_back(store[i++]);
      } else {
        store.push_back(package[p++]);
      }
    }
    run_end[j] = store.size();
    list_size[j] = list_size[j + 1] / 2 + m;
    top = j;
  }

  lengths_from_selection(
      m, top, depth, list_size,
      [&](unsigned j, size_t take) {
        size_t leaves_here = 0, position = 0;
        for (size_t r = run_begin[j]; position < take; ++r) {
          const size_t n = std::min<size_t>(store[r].count, take - position);
          leaves_here += store[r].leaf != 0 ? n : 0;
          position += n;
        }
        return leaves_here;
      },
      leaves, lengths, scratch);
}

}  // namespace

// Package-merge by runs where the leaves have few distinct weights, else by items.
void detail::package_merge(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths,
                           Scratch& scratch) {
  size_t leaf_runs = 1;
  for (size_t k = 1; k < sorted.m; ++k) leaf_runs += sorted.weights[k] != sorted.weights[k - 1] ? 1 : 0;
  if (leaf_runs * 4 <= sorted.m) {
    package_merge_runs(sorted, max_length, lengths, scratch);
  } else {
    package_merge_items(sorted, max_length, lengths, scratch);
  }
}

}  // namespace fz::huffman
