// Huffman code lengths and canonical codes on the host, shared by the CPU
// coder and the CUDA backend (format and methods: huffman/huffman.hpp): an
// O(m) Huffman code after a radix sort of the used symbols, package-merge
// only where that code exceeds the limit.
#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_format.hpp"

namespace fz::huffman {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using format::Canonical;
using format::kHeaderBytes;
using format::kLengthBits;
using format::make_canonical;
using format::table_bytes;

// The same over a whole length table.
Canonical make_canonical(const std::vector<uint8_t>& lengths) {
  uint32_t lo = 0;
  while (lo < lengths.size() && lengths[lo] == 0) ++lo;
  if (lo == lengths.size()) return Canonical{};
  uint32_t hi = static_cast<uint32_t>(lengths.size() - 1);
  while (lengths[hi] == 0) --hi;
  return make_canonical(lengths.data(), lo, hi);
}

// The used symbols ordered by (count, symbol) ascending: an LSD radix sort on
// the count, a byte per pass and only as many passes as the largest count has
// bytes, over symbols taken in ascending order (each pass is stable, so equal
// counts keep symbol order). Two passes of 256 buckets for any stream under
// 65536 symbols: far cheaper than a comparison sort for the few hundred used
// symbols of a small chunk, and it allocates only the two arrays it returns.
struct SortedLeaves {
  std::vector<uint32_t> symbols;
  std::vector<uint64_t> weights;  // histogram[symbols[k]]
};

SortedLeaves sort_leaves(const uint64_t* histogram, uint32_t alphabet) {
  SortedLeaves sorted;
  std::vector<uint32_t>& symbols = sorted.symbols;
  uint64_t largest = 0;
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (histogram[s] != 0) {
      symbols.push_back(s);
      largest = std::max(largest, histogram[s]);
    }
  }
  const size_t m = symbols.size();
  std::vector<uint32_t> scratch(m);
  for (unsigned shift = 0; shift < 64 && (largest >> shift) != 0; shift += 8) {
    std::array<uint32_t, 257> bucket_start{};
    for (uint32_t s : symbols) ++bucket_start[((histogram[s] >> shift) & 0xFFu) + 1];
    for (size_t d = 1; d <= 256; ++d) bucket_start[d] += bucket_start[d - 1];
    for (uint32_t s : symbols) scratch[bucket_start[(histogram[s] >> shift) & 0xFFu]++] = s;
    symbols.swap(scratch);
  }
  sorted.weights.resize(m);
  for (size_t k = 0; k < m; ++k) sorted.weights[k] = histogram[symbols[k]];
  return sorted;
}

// Unlimited Huffman code lengths of m >= 2 leaves whose weights are sorted
// ascending, in O(m) (Moffat and Katajainen's in-place method: pairing the two
// lightest of the leaves and the internal nodes made so far, which are made in
// ascending weight, so two queues need no heap). On return weight[k] is leaf
// k's length, non-increasing in k. Ties go to the leaf (the leaf is taken
// unless an internal node is strictly lighter), so the result is a pure
// function of the sorted weights. The sum of all weights must fit in u64.
void huffman_lengths_in_place(std::vector<uint64_t>& weight) {
  uint64_t* a = weight.data();
  const size_t m = weight.size();
  // First pass, left to right: a[next] becomes internal node `next`'s weight,
  // and once paired, the index of its parent.
  a[0] += a[1];
  size_t root = 0;  // the lightest internal node not yet paired
  size_t leaf = 2;  // the lightest leaf not yet paired
  for (size_t next = 1; next < m - 1; ++next) {
    if (leaf >= m || a[root] < a[leaf]) {
      a[next] = a[root];
      a[root++] = next;
    } else {
      a[next] = a[leaf++];
    }
    if (leaf >= m || (root < next && a[root] < a[leaf])) {
      a[next] += a[root];
      a[root++] = next;
    } else {
      a[next] += a[leaf++];
    }
  }
  // Second pass, right to left: internal node depths from parent pointers
  // (node m-2 is the root).
  a[m - 2] = 0;
  for (size_t next = m - 2; next-- > 0;) a[next] = a[a[next]] + 1;
  // Third pass: the leaves hang below the internal nodes of each depth, the
  // deepest leaves being the lightest (lowest indices).
  size_t available = 1;  // nodes at depth `depth`
  size_t used = 0;       // of those, internal
  uint64_t depth = 0;
  size_t internal = m - 1;  // internal nodes not yet counted, as an index bound
  size_t next_leaf = m;
  while (available > 0) {
    while (internal > 0 && a[internal - 1] == depth) {
      ++used;
      --internal;
    }
    while (available > used) {
      a[--next_leaf] = depth;
      --available;
    }
    available = 2 * used;
    ++depth;
    used = 0;
  }
}

// Package-merge (see huffman.hpp) on m >= 2 sorted leaves: adds each leaf's
// length to `lengths` (all zero on entry).
void package_merge(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths) {
  const std::vector<uint32_t>& leaves = sorted.symbols;  // used symbols by (count, symbol)
  const std::vector<uint64_t>& leaf_weight = sorted.weights;
  const size_t m = leaves.size();
  // is_leaf[j] records list j's merge order (1 = leaf); only
  // the order is needed to walk the selection back, not the packages' contents.
  const unsigned depth = static_cast<unsigned>(std::min<size_t>(max_length, m - 1));
  std::vector<std::vector<uint8_t>> is_leaf(depth + 1);
  std::vector<uint64_t> weight = leaf_weight;  // list[depth]
  is_leaf[depth].assign(m, 1);
  std::vector<uint64_t> merged;
  for (unsigned j = depth - 1; j >= 1; --j) {
    const size_t packages = weight.size() / 2;
    merged.clear();
    merged.reserve(m + packages);
    is_leaf[j].clear();
    is_leaf[j].reserve(m + packages);
    size_t a = 0;
    size_t p = 0;
    while (a < m || p < packages) {
      const bool take_leaf =
          p == packages || (a < m && leaf_weight[a] <= weight[2 * p] + weight[2 * p + 1]);
      if (take_leaf) {
        merged.push_back(leaf_weight[a++]);
      } else {
        merged.push_back(weight[2 * p] + weight[2 * p + 1]);
        ++p;
      }
      is_leaf[j].push_back(take_leaf ? 1 : 0);
    }
    weight.swap(merged);
  }

  // Walk the selection: 2m-2 items of list 1; the leaves selected in a list
  // are always the first ones in (count, symbol) order.
  std::vector<uint32_t> selected_leaves(depth + 1, 0);
  size_t take = 2 * m - 2;
  for (unsigned j = 1; j <= depth; ++j) {
    if (take > is_leaf[j].size()) throw std::logic_error("package-merge selection overran a list");
    const size_t leaves_here = static_cast<size_t>(
        std::count(is_leaf[j].begin(), is_leaf[j].begin() + static_cast<std::ptrdiff_t>(take), uint8_t{1}));
    selected_leaves[j] = static_cast<uint32_t>(leaves_here);
    take = 2 * (take - leaves_here);
  }
  if (take != 0) throw std::logic_error("package-merge selection left packages in the last list");
  for (unsigned j = 1; j <= depth; ++j) {
    for (size_t k = 0; k < selected_leaves[j]; ++k) ++lengths[leaves[k]];
  }
}

}  // namespace
std::vector<uint8_t> code_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  format::check_code_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  SortedLeaves leaves = sort_leaves(histogram, alphabet);
  const size_t m = leaves.symbols.size();
  if (m == 0) return lengths;
  if (m == 1) {
    lengths[leaves.symbols[0]] = 1;
    return lengths;
  }
  // An ordinary Huffman code is optimal among all prefix codes, so when its
  // longest code (the lightest leaf's) fits the limit it is also optimal under
  // the limit: the same total bits as package-merge, at O(m) after the sort.
  // Only when it does not fit does package-merge (O(m L)) run.
  std::vector<uint64_t> depth = leaves.weights;
  huffman_lengths_in_place(depth);
  if (depth[0] > max_length) {
    package_merge(leaves, max_length, lengths);
  } else {
    for (size_t k = 0; k < m; ++k) lengths[leaves.symbols[k]] = static_cast<uint8_t>(depth[k]);
  }
  return lengths;
}

std::vector<uint8_t> package_merge_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  format::check_code_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  const SortedLeaves leaves = sort_leaves(histogram, alphabet);
  if (leaves.symbols.size() == 1) lengths[leaves.symbols[0]] = 1;
  if (leaves.symbols.size() >= 2) package_merge(leaves, max_length, lengths);
  return lengths;
}

std::vector<uint32_t> canonical_codes(const std::vector<uint8_t>& lengths) {
  const Canonical c = make_canonical(lengths);
  std::vector<uint32_t> codes(lengths.size(), 0);
  for (unsigned l = 1; l <= c.max_used; ++l) {
    for (uint32_t k = 0; k < c.count[l]; ++k) codes[c.sorted[c.index[l] + k]] = c.first[l] + k;
  }
  return codes;
}

}  // namespace fz::huffman
