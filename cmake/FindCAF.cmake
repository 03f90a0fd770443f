# FindCAF: locates the C++ Actor Framework 0.17 as Debian's libcaf-dev ships
# it (headers and shared libraries, but no CMake package config).
#
# Provides the imported targets CAF::core and, when present, CAF::io.
# Refuses any other CAF series: 0.18 changed the API this project uses.
#
# CAF_ROOT (a CMake or environment variable): take CAF from that prefix
# (include/, lib/) and from nowhere else, neither header nor library from the
# system. ./bus.sh test --tsan points it at the libcaf_core built with
# ThreadSanitizer by scripts/build-caf-tsan.sh; headers and library must come
# from the same build, or the ABI may not match. Results cached from another
# prefix (a build directory first configured without CAF_ROOT) are found
# again. The imported library lies outside the linker's default paths, so
# CMake puts its directory in the build tree's RPATH: the tests load it.

if(NOT CAF_ROOT AND DEFINED ENV{CAF_ROOT})
  set(CAF_ROOT "$ENV{CAF_ROOT}")
endif()
if(CAF_ROOT)
  get_filename_component(CAF_ROOT "${CAF_ROOT}" ABSOLUTE)
  foreach(_caf_var CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)
    string(FIND "${${_caf_var}}" "${CAF_ROOT}/" _caf_at)
    if(NOT _caf_at EQUAL 0)
      unset(${_caf_var} CACHE)
    endif()
  endforeach()
  set(_caf_where PATHS "${CAF_ROOT}" NO_DEFAULT_PATH)
else()
  set(_caf_where)
endif()

find_path(CAF_INCLUDE_DIR caf/all.hpp ${_caf_where} PATH_SUFFIXES include)
find_library(CAF_CORE_LIBRARY NAMES caf_core ${_caf_where} PATH_SUFFIXES lib)
find_library(CAF_IO_LIBRARY NAMES caf_io ${_caf_where} PATH_SUFFIXES lib)

if(CAF_INCLUDE_DIR)
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" CAF_VERSION_NUMBER "${_caf_version_line}")
  math(EXPR _caf_major "${CAF_VERSION_NUMBER} / 10000")
  math(EXPR _caf_minor "(${CAF_VERSION_NUMBER} / 100) % 100")
  math(EXPR _caf_patch "${CAF_VERSION_NUMBER} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_CORE_LIBRARY CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION)

if(CAF_FOUND AND (CAF_VERSION VERSION_LESS 0.17 OR NOT CAF_VERSION VERSION_LESS 0.18))
  message(FATAL_ERROR "bus needs CAF 0.17.x (Debian's libcaf-dev), found ${CAF_VERSION}")
endif()

if(CAF_FOUND AND NOT TARGET CAF::core)
  find_package(Threads REQUIRED)
  add_library(CAF::core SHARED IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  if(CAF_IO_LIBRARY)
    add_library(CAF::io SHARED IMPORTED)
    set_target_properties(CAF::io PROPERTIES
      IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
      INTERFACE_LINK_LIBRARIES CAF::core)
  endif()
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)
