// Huffman code lengths and canonical codes on the host, shared by the CPU
// coder and the CUDA backend (format and methods: huffman/huffman.hpp): an
// O(m) Huffman code after a radix sort of the used symbols, package-merge
// (package_merge_cpu.cpp) only where that code exceeds the limit.
#include <algorithm>
#include <array>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/error.hpp"
#include "huffman/huffman.hpp"
#include "huffman/huffman_format.hpp"
#include "huffman/lengths_cpu.hpp"

namespace fz::huffman {
namespace {

static_assert(sizeof(size_t) == 8, "stream sizes are 64-bit");

using format::Canonical;
using format::make_canonical;

// The same over a whole length table.
Canonical make_canonical(const std::vector<uint8_t>& lengths) {
  uint32_t lo = 0;
  while (lo < lengths.size() && lengths[lo] == 0) ++lo;
  if (lo == lengths.size()) return Canonical{};
  uint32_t hi = static_cast<uint32_t>(lengths.size() - 1);
  while (lengths[hi] == 0) --hi;
  return make_canonical(lengths.data(), lo, hi);
}

using detail::at_least;
using detail::package_merge;
using detail::Scratch;
using detail::SortedLeaves;

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// The used symbols ordered by (count, symbol) ascending: an LSD radix sort on
// the count, a byte per pass and only as many passes as the largest count has
// bytes, over symbols taken in ascending order (each pass is stable, so equal
// counts keep symbol order). Two passes of 256 buckets for any stream under
// 65536 symbols: far cheaper than a comparison sort. One scan counts the
// bytes of every pass; a pass whose byte is the same for all symbols leaves
// the order as it is and is skipped.
SortedLeaves sort_leaves(const uint64_t* histogram, uint32_t alphabet, Scratch& scratch) {
  uint32_t* symbols = at_least(scratch.symbols, alphabet);
  size_t m = 0;
  uint64_t any_bits = 0;
  // Blocks of 8 counts that are all zero (most of a sparse histogram) are
  // passed over with one test.
  uint32_t s = 0;
  for (; s + 8 <= alphabet; s += 8) {
    uint64_t block = 0;
    for (uint32_t i = 0; i < 8; ++i) block |= histogram[s + i];
    if (block == 0) continue;
    any_bits |= block;
    for (uint32_t i = 0; i < 8; ++i) {
      symbols[m] = s + i;
      m += histogram[s + i] != 0 ? 1 : 0;
    }
  }
  for (; s < alphabet; ++s) {
    symbols[m] = s;
    m += histogram[s] != 0 ? 1 : 0;
    any_bits |= histogram[s];
  }
  unsigned passes = 0;
  while (passes < 8 && (any_bits >> (8 * passes)) != 0) ++passes;
  std::array<std::array<uint32_t, 256>, 8> counts;
  for (unsigned pass = 0; pass < passes; ++pass) counts[pass].fill(0);
  for (size_t k = 0; k < m; ++k) {
    const uint64_t c = histogram[symbols[k]];
    for (unsigned pass = 0; pass < passes; ++pass) ++counts[pass][(c >> (8 * pass)) & 0xFFu];
  }
  uint32_t* other = at_least(scratch.symbols_swap, m);
  for (unsigned pass = 0; pass < passes; ++pass) {
    std::array<uint32_t, 256>& start = counts[pass];
    if (m == 0 || start[(histogram[symbols[0]] >> (8 * pass)) & 0xFFu] == m) continue;
    uint32_t sum = 0;
    for (uint32_t& c : start) {
      const uint32_t n = c;
      c = sum;
      sum += n;
    }
    for (size_t k = 0; k < m; ++k) {
      const uint32_t s = symbols[k];
      other[start[(histogram[s] >> (8 * pass)) & 0xFFu]++] = s;
    }
    std::swap(symbols, other);
  }
  uint64_t* weights = at_least(scratch.weights, m + 1);
  for (size_t k = 0; k < m; ++k) weights[k] = histogram[symbols[k]];
  return SortedLeaves{symbols, weights, m};
}

// Unlimited Huffman code lengths of m >= 2 leaves whose weights are sorted
// ascending, in O(m) (Moffat and Katajainen's in-place method: pairing the two
// lightest of the leaves and the internal nodes made so far, which are made in
// ascending weight, so two queues need no heap). On return weight[k] is leaf
// k's length, non-increasing in k. Ties go to the leaf (the leaf is taken
// unless an internal node is strictly lighter), so the result is a pure
// function of the sorted weights. The sum of all weights must fit in u64.
void huffman_lengths_in_place(uint64_t* a, size_t m) {
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

}  // namespace

std::vector<uint8_t> code_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  format::check_code_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  Scratch& s = scratch();
  const SortedLeaves leaves = sort_leaves(histogram, alphabet, s);
  const size_t m = leaves.m;
  if (m == 0) return lengths;
  if (m == 1) {
    lengths[leaves.symbols[0]] = 1;
    return lengths;
  }
  // An ordinary Huffman code is optimal among all prefix codes, so when its
  // longest code (the lightest leaf's) fits the limit it is also optimal under
  // the limit: the same total bits as package-merge, at O(m) after the sort.
  // Only when it does not fit does package-merge (O(m L)) run.
  uint64_t* const depth = at_least(s.depth, m);
  std::copy(leaves.weights, leaves.weights + m, depth);
  huffman_lengths_in_place(depth, m);
  if (depth[0] > max_length) {
    package_merge(leaves, max_length, lengths, s);
  } else {
    for (size_t k = 0; k < m; ++k) lengths[leaves.symbols[k]] = static_cast<uint8_t>(depth[k]);
  }
  return lengths;
}

std::vector<uint8_t> package_merge_lengths(const uint64_t* histogram, uint32_t alphabet, unsigned max_length) {
  format::check_code_config(alphabet, max_length);
  std::vector<uint8_t> lengths(alphabet, 0);
  Scratch& s = scratch();
  const SortedLeaves leaves = sort_leaves(histogram, alphabet, s);
  if (leaves.m == 1) lengths[leaves.symbols[0]] = 1;
  if (leaves.m >= 2) package_merge(leaves, max_length, lengths, s);
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
