# fz_memory_probe: the engine's extra memory per chunk, both ways (issue 12).
# Run alone it prints a table; ctest runs one case per preset, data and
# direction, and fails when the extra peak exceeds the limit x the chunk
# (docs/PERFORMANCE.md, "Memory per chunk"). The limits: about the chunk
# for every case but compressing noise with cusz (every element a Lorenzo
# outlier until the encoder sees the frame cannot be smaller and stops).
add_executable(fz_memory_probe ${CMAKE_CURRENT_LIST_DIR}/memory_probe.cpp)
target_link_libraries(fz_memory_probe PRIVATE fz_engine)
target_compile_definitions(fz_memory_probe PRIVATE FZ_DEFAULT_DATA_DIR="${CMAKE_SOURCE_DIR}/../shared/data")
foreach(case lossless:1.10 pfpl:1.10 fzgpu:1.10 cusz:1.10
             lossless-noise:1.10 pfpl-noise:1.10 fzgpu-noise:1.10 cusz-noise:2.00)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 preset)
  list(GET parts 1 limit)
  foreach(direction compress decompress)
    add_test(NAME engine.memory_${preset}_${direction}
             COMMAND fz_memory_probe ${preset} ${direction} 256 ${limit})
    # One at a time: each holds about a GiB, and RSS peaks are per process anyway.
    # The CPU engine's figures (the GPU path's host memory is in docs/PERFORMANCE.md).
    set_tests_properties(engine.memory_${preset}_${direction} PROPERTIES
                         LABELS "cpu;engine" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE ENVIRONMENT "H5Z_FZ_DEVICE=cpu")
  endforeach()
endforeach()
