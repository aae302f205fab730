# The file-level hostile-chunk harness (issue 12): h5file_fuzz under FZ_FUZZ,
# h5file_replay (ctest, label cpu; the ASan build runs it too) otherwise.
# Both compile the filter's sources into the program and link libhdf5 like any
# HDF5 application; the shipped plugin (filter/CMakeLists.txt) is untouched and
# still links nothing of HDF5.
set(HDF5_PREFER_PARALLEL OFF)
find_package(HDF5 COMPONENTS C)
if(NOT HDF5_FOUND)
  message(WARNING "HDF5 not found: h5file_fuzz / h5file_replay are not built")
  return()
endif()

# The plugin's own sources, with whatever filter/CMakeLists.txt gives it; fuzz
# builds skip filter/ altogether, so there every filter/*.cpp is compiled.
if(TARGET H5Zfz)
  get_target_property(FZ_H5FILE_FILTER_SOURCES H5Zfz SOURCES)
else()
  file(GLOB FZ_H5FILE_FILTER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/filter/*.cpp)
endif()
add_library(fz_h5file_filter STATIC ${FZ_H5FILE_FILTER_SOURCES})
target_include_directories(fz_h5file_filter PUBLIC ${CMAKE_SOURCE_DIR}/filter ${HDF5_INCLUDE_DIRS})
if(TARGET fz_filter_core)
  target_link_libraries(fz_h5file_filter PUBLIC fz_filter_core)
else()
  target_link_libraries(fz_h5file_filter PUBLIC fz_engine)
endif()
target_link_libraries(fz_h5file_filter PUBLIC ${HDF5_C_LIBRARIES} ${CMAKE_DL_LIBS})

if(FZ_FUZZ)
  set(FZ_H5FILE_TARGET h5file_fuzz)
else()
  set(FZ_H5FILE_TARGET h5file_replay)
endif()
add_executable(${FZ_H5FILE_TARGET} ${CMAKE_CURRENT_LIST_DIR}/${FZ_H5FILE_TARGET}.cpp)
target_link_libraries(${FZ_H5FILE_TARGET} PRIVATE fz_h5file_filter fz_engine)
target_include_directories(${FZ_H5FILE_TARGET} PRIVATE ${CMAKE_SOURCE_DIR}/engine/src ${CMAKE_CURRENT_LIST_DIR})
if(FZ_FUZZ)
  target_link_options(h5file_fuzz PRIVATE -fsanitize=fuzzer)
else()
  add_test(NAME filter.h5file_replay COMMAND h5file_replay)
  # CPU decoding even where a GPU is present (label cpu; no GPU resource lock).
  set_tests_properties(filter.h5file_replay PROPERTIES LABELS "cpu;filter" TIMEOUT 600
                       ENVIRONMENT "H5Z_FZ_DEVICE=cpu")
endif()
