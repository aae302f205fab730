# fz_memory_probe: the engine's extra memory per chunk, both ways (issue 12).
# Run alone it prints a table; ctest runs one case per preset and direction
# and fails when the extra peak exceeds the limit x the chunk (docs/PERFORMANCE.md).
add_executable(fz_memory_probe ${CMAKE_CURRENT_LIST_DIR}/memory_probe.cpp)
target_link_libraries(fz_memory_probe PRIVATE fz_engine)
target_compile_definitions(fz_memory_probe PRIVATE FZ_DEFAULT_DATA_DIR="${CMAKE_SOURCE_DIR}/../shared/data")
foreach(preset lossless pfpl fzgpu cusz)
  foreach(direction compress decompress)
    add_test(NAME engine.memory_${preset}_${direction}
             COMMAND fz_memory_probe ${preset} ${direction} 256 1.10)
    # One at a time: each holds about a GiB, and RSS peaks are per process anyway.
    set_tests_properties(engine.memory_${preset}_${direction} PROPERTIES
                         LABELS "cpu;engine" SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
  endforeach()
endforeach()
