# Installing relpos (DESIGN §9): `cmake --install BUILD --prefix PREFIX` puts the libraries and
# their headers, the `relpos` binary, configs/ and the docs under PREFIX, with a CMake package
# (find_package(relpos): relpos::core, autograd, datasets, layers, train, and relpos::relpos for
# all of them) and a pkg-config file (relpos.pc). `cpack -G DEB` in a build folder makes a Debian
# package of the same files (tools/make-deb.sh builds the CPU-only one).
include(CMakePackageConfigHelpers)

# relpos::relpos: every library. The registries (attention variants, models, datasets,
# optimizers) fill themselves from their own files, so the archives that hold them are linked
# whole (relpos::datasets, relpos::layers and relpos::train are those whole-archive links).
add_library(relpos_all INTERFACE)
target_link_libraries(relpos_all INTERFACE relpos::train)
add_library(relpos::relpos ALIAS relpos_all)

set_target_properties(relpos_core PROPERTIES EXPORT_NAME core)
set_target_properties(relpos_autograd PROPERTIES EXPORT_NAME autograd)
set_target_properties(relpos_datasets PROPERTIES EXPORT_NAME datasets_archive)
set_target_properties(relpos_datasets_whole PROPERTIES EXPORT_NAME datasets)
set_target_properties(relpos_layers PROPERTIES EXPORT_NAME layers_archive)
set_target_properties(relpos_layers_whole PROPERTIES EXPORT_NAME layers)
set_target_properties(relpos_train PROPERTIES EXPORT_NAME train_archive)
set_target_properties(relpos_train_whole PROPERTIES EXPORT_NAME train)
set_target_properties(relpos_openblas PROPERTIES EXPORT_NAME openblas)
set_target_properties(relpos_all PROPERTIES EXPORT_NAME relpos)

set(RELPOS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/relpos)
install(TARGETS relpos_core relpos_autograd relpos_datasets relpos_datasets_whole relpos_layers
                relpos_layers_whole relpos_train relpos_train_whole relpos_openblas relpos_all
        EXPORT relposTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/relpos)
install(TARGETS relpos RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT relposTargets NAMESPACE relpos:: DESTINATION ${RELPOS_CMAKE_DIR})

# The public headers of each library; the CUDA kernels' headers (core/cuda/) stay inside.
foreach(folder core autograd datasets layers train)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/relpos/${folder}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.inc"
          PATTERN "cuda" EXCLUDE)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/relpos/configs)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/tools/plots.py
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ ${PROJECT_SOURCE_DIR}/examples
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/relposConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/relposConfig.cmake
                              INSTALL_DESTINATION ${RELPOS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/relposConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/relposConfig.cmake ${PROJECT_BINARY_DIR}/relposConfigVersion.cmake
        DESTINATION ${RELPOS_CMAKE_DIR})

# relpos.pc: the static archives (the registries' whole) and every library they need, for
# builds without CMake: c++ -std=c++20 main.cpp $(pkg-config --cflags --libs relpos).
find_package(HDF5 REQUIRED COMPONENTS C)
set(_relpos_pc_defs "")
foreach(dir ${HDF5_C_INCLUDE_DIRS})
  string(APPEND _relpos_pc_defs " -I${dir}")
endforeach()
set(_relpos_pc_libs "${OPENBLAS_LIBRARY}")
foreach(lib ${HDF5_C_LIBRARIES})
  string(APPEND _relpos_pc_libs " ${lib}")
endforeach()
if(RELPOS_WITH_CUDA)
  string(APPEND _relpos_pc_defs " -DRELPOS_WITH_CUDA=1")
  string(APPEND _relpos_pc_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lcufft"
                                " ${CUDNN_LIBRARY}")
  if(RELPOS_WITH_NCCL)
    string(APPEND _relpos_pc_libs " ${NCCL_LIBRARY}")
  endif()
endif()
if(RELPOS_WITH_MPI)
  string(APPEND _relpos_pc_defs " -DRELPOS_WITH_MPI=1")
  foreach(lib ${MPI_C_LIBRARIES})
    string(APPEND _relpos_pc_libs " ${lib}")
  endforeach()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/relpos.pc.in ${PROJECT_BINARY_DIR}/relpos.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/relpos.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: the package's dependencies are found by dpkg-shlibdeps from what the binary
# links; the development packages are added for the libraries and headers.
set(CPACK_PACKAGE_NAME relpos)
set(CPACK_PACKAGE_VENDOR "relpos")
set(CPACK_PACKAGE_CONTACT "relpos maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "C++20 tensor and autograd engine for efficient-attention research")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libopenblas-dev, libfftw3-dev, libhdf5-dev, libspdlog-dev, libfmt-dev, libyaml-cpp-dev, \
nlohmann-json3-dev, zlib1g-dev, pkg-config")
if(RELPOS_WITH_MPI)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libopenmpi-dev, openmpi-bin")
endif()
set(CPACK_STRIP_FILES bin/relpos)
include(CPack)
