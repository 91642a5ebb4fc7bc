# Precompiled headers: the standard-library and fmt headers that nearly every relpos source
# includes (core/tensor.h brings most of them) are parsed once per target instead of once per
# source. Measured on gcc 12 and clang 14 (2-core machine): parsing is about three quarters of a
# typical source's compile, and these headers take 0.6-1.0 s of it. Applied to the C++ sources of
# every target with at least `RELPOS_PCH_MIN_SOURCES` of them (the header itself takes ~4 s to
# precompile per target); CUDA sources are left alone. RELPOS_PCH=OFF builds without them, as a
# program including relpos's installed headers does.
option(RELPOS_PCH "Precompile the standard-library and fmt headers per target" ON)
set(RELPOS_PCH_MIN_SOURCES 4)
set(RELPOS_PCH_HEADERS
    <algorithm> <cmath> <cstdint> <filesystem> <functional> <map> <memory> <optional> <sstream>
    <string> <unordered_map> <vector> <fmt/format.h> <fmt/ranges.h>)

# Adds the headers to every eligible target defined in `dir` and the folders below it.
function(relpos_precompile_headers dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    list(FILTER sources INCLUDE REGEX "\\.cpp$")
    list(LENGTH sources count)
    if(count LESS RELPOS_PCH_MIN_SOURCES)
      continue()
    endif()
    foreach(header IN LISTS RELPOS_PCH_HEADERS)
      target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
    endforeach()
  endforeach()
  get_property(folders DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(folder IN LISTS folders)
    relpos_precompile_headers(${folder})
  endforeach()
endfunction()
