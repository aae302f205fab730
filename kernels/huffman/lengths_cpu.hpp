// What the two halves of the host code-length builder share
// (huffman/huffman.hpp states the method): lengths_cpu.cpp sorts the used
// symbols and builds an ordinary Huffman code, and calls package_merge
// (package_merge_cpu.cpp) only where that code exceeds the length limit.
// Kept apart from huffman.hpp because none of it is part of the kernel's
// interface: the per-thread scratch both halves fill, the sorted leaves that
// pass between them, and package_merge itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fz::huffman::detail {

// Per-thread scratch, grown as needed and kept: code_lengths sits on the
// GPU compressor's critical path, and fresh buffers of a few hundred KiB
// cost page faults on every call.
struct Scratch {
  std::vector<uint32_t> symbols, symbols_swap;
  std::vector<uint64_t> weights;  // the sorted leaves' weights, then a sentinel
  std::vector<uint64_t> depth;    // huffman_lengths_in_place
  std::vector<uint64_t> words;    // package-merge: packages, the current list
  std::vector<uint8_t> order;     // package-merge: every list's merge order
  std::vector<uint32_t> ends;     // package-merge: the walk's leaf counts
  struct Run {
    uint64_t weight;
    uint32_t count;
    uint32_t leaf;  // 1: `count` leaves of this weight; 0: `count` packages
  };
  std::vector<Run> runs;          // package-merge by runs: every list built
  std::vector<Run> package_runs;
};

template <typename T>
T* at_least(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// The used symbols ordered by (count, symbol) ascending, and their weights
// (sort_leaves in lengths_cpu.cpp).
struct SortedLeaves {
  const uint32_t* symbols;  // used symbols by (count, symbol)
  uint64_t* weights;        // histogram[symbols[k]], then room for a sentinel
  size_t m;
};

// Package-merge (huffman.hpp) on m = sorted.m >= 2 leaves, max_length the
// limit: sets each leaf's length in `lengths` (all zero on entry), by runs
// where the leaves have few distinct weights, else by items. Uses
// sorted.weights[m] as a sentinel slot.
void package_merge(const SortedLeaves& sorted, unsigned max_length, std::vector<uint8_t>& lengths, Scratch& scratch);

}  // namespace fz::huffman::detail
