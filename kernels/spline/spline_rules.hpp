// The rules of the spline stage that the CPU (encode_cpu.cpp, decode_cpu.cpp)
// and the GPU (encode_cuda.cu, decode_cuda.cu) share, so that the two cannot
// drift apart (spline.hpp states the format). They live in six headers by
// subject, each readable alone; this one includes them all, for the code
// that uses several:
//   spline_grid_rules.hpp      tile size and level count per rank, the level
//                              flags, the chunk's tile and anchor grids, a
//                              tile's frame, a level's passes;
//   spline_code_rules.hpp      the code groups and their closed-form offsets,
//                              the code forms;
//   spline_side_rules.hpp      the tuning sample, the side stream's layout,
//                              what a valid config is, the per-level steps;
//   spline_predict_rules.hpp   the 1-D predictor (stencils);
//   spline_quantize_rules.hpp  the quantization of one element, fill codes;
//   spline_coarse_rules.hpp    the coarse levels over the anchor grid.
// The per-element rules are host and device code (common/host_device.hpp);
// nothing here allocates or throws.
#pragma once

#include "spline/spline_grid_rules.hpp"
#include "spline/spline_code_rules.hpp"
#include "spline/spline_side_rules.hpp"
#include "spline/spline_predict_rules.hpp"
#include "spline/spline_quantize_rules.hpp"
#include "spline/spline_coarse_rules.hpp"
