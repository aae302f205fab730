# fz_memory_probe: the engine's extra memory per chunk, both ways (issue 12).
# Run alone it prints a table; ctest runs one case per preset, data and
# direction, and fails when the extra peak exceeds the limit x the chunk
# (docs/PERFORMANCE.md, "Memory per chunk"): 1.10x the chunk, plus 4 MiB per
# engine thread of working memory that grows with the threads, not the chunk.
add_executable(fz_memory_probe ${CMAKE_CURRENT_LIST_DIR}/memory_probe.cpp)
target_link_libraries(fz_memory_probe PRIVATE fz_engine)
target_compile_definitions(fz_memory_probe PRIVATE FZ_DEFAULT_DATA_DIR="${CMAKE_SOURCE_DIR}/../shared/data")
foreach(preset lossless pfpl fzgpu cusz lossless-noise pfpl-noise fzgpu-noise cusz-noise cusz-nan)
  foreach(direction compress decompress)
    add_test(NAME engine.memory_${preset}_${direction}
             COMMAND fz_memory_probe ${preset} ${direction} 256 1.10)
    # One at a time: each holds about a GiB, and RSS peaks are per process anyway.
    # The CPU engine's figures (the GPU path's host memory is in docs/PERFORMANCE.md).
    set_tests_properties(engine.memory_${preset}_${direction} PROPERTIES
                         LABELS "cpu;engine" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE ENVIRONMENT "H5Z_FZ_DEVICE=cpu")
  endforeach()
endforeach()
