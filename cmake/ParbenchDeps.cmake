# Third-party libraries. Every program needs CLI11, nlohmann-json, fast-cpp-csv-parser's header (schedule and
# calibration CSVs) and threads; the three header-only ones are fetched when missing, where allowed. Optional:
# Boost.Context (the simt fibers' fast switch), GoogleTest (tests/), Google Benchmark (bench_kernels);
# parbench-plot's own are found in plots/.
#
# PARBENCH_FETCH_DEPS says what FetchContent may download: AUTO fetches CLI11, nlohmann-json and
# fast-cpp-csv-parser's csv.h when they are not found (GoogleTest missing leaves the tests out), ON fetches those
# and GoogleTest without looking for installed ones, OFF fetches nothing. FETCHCONTENT_SOURCE_DIR_<NAME> (CLI11,
# NLOHMANN_JSON, FCCP, GOOGLETEST) points a fetch at a local folder instead: for the header-only ones, one holding
# just the headers in the upstream layout (csv.h alone for FCCP).
include(FetchContent)
set(PARBENCH_FETCH_DEPS AUTO CACHE STRING "Fetch missing libraries with FetchContent: AUTO, ON (always) or OFF")
set_property(CACHE PARBENCH_FETCH_DEPS PROPERTY STRINGS AUTO ON OFF)
if(NOT PARBENCH_FETCH_DEPS MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PARBENCH_FETCH_DEPS=${PARBENCH_FETCH_DEPS} is not valid; use AUTO, ON or OFF")
endif()
if(POLICY CMP0135)  # a fetched archive's files dated at extraction, so a new URL rebuilds what uses them
  cmake_policy(SET CMP0135 NEW)
endif()

# The fetched versions: the ones this suite is checked with (Debian 12's).
set(PARBENCH_CLI11_URL https://github.com/CLIUtils/CLI11/archive/v2.1.2.tar.gz)
set(PARBENCH_CLI11_SHA256 26291377e892ba0e5b4972cdfd4a2ab3bf53af8dac1f4ea8fe0d1376b625c8cb)
set(PARBENCH_JSON_URL https://github.com/nlohmann/json/archive/v3.11.2.tar.gz)
set(PARBENCH_JSON_SHA256 d69f9deb6a75e2580465c6c4c5111b89c4dc2fa94e3a85fcd2ffcd9a143d9273)
set(PARBENCH_GTEST_URL https://github.com/google/googletest/archive/release-1.12.1.tar.gz)
set(PARBENCH_GTEST_SHA256 81964fe578e9bd7c94dfdb09c8e4d6e6759e19967e397dbea48d1c10e45d0df2)

# A library every program needs was not found and may not be fetched.
function(parbench_dependency_missing package debian rhel)
  if(PARBENCH_FETCH_DEPS STREQUAL "OFF")
    set(fetch "or configure with -DPARBENCH_FETCH_DEPS=AUTO to download it (PARBENCH_FETCH_DEPS=OFF fetches nothing)")
  else()
    set(fetch "(it cannot be fetched)")
  endif()
  message(FATAL_ERROR "parbench needs ${package}, which was not found. Install it (Debian/Ubuntu: ${debian}; "
                      "RHEL/Rocky: ${rhel}), add its prefix to CMAKE_PREFIX_PATH, ${fetch}.")
endfunction()

# Where a fetch came from, for the summary: the local folder that stood in for the download, or the URL.
function(parbench_fetched_from name url out)
  string(TOUPPER "${name}" upper)
  if(FETCHCONTENT_SOURCE_DIR_${upper})
    set(${out} "${FETCHCONTENT_SOURCE_DIR_${upper}} (FETCHCONTENT_SOURCE_DIR_${upper})" PARENT_SCOPE)
  else()
    set(${out} "${url}" PARENT_SCOPE)
  endif()
endfunction()

# A header-only library fetched and made an INTERFACE target of: only the headers are used, never the upstream's
# CMakeLists (SOURCE_SUBDIR names a folder it lacks, so MakeAvailable populates without add_subdirectory). HEADER is
# looked for under each of ARGN's include folders (relative to the source) in turn.
function(parbench_fetch_headers name target url sha256 header)
  FetchContent_Declare(${name} URL ${url} URL_HASH SHA256=${sha256} SOURCE_SUBDIR parbench-headers-only)
  FetchContent_MakeAvailable(${name})
  string(TOLOWER "${name}" lower)
  set(source "${${lower}_SOURCE_DIR}")
  foreach(dir IN LISTS ARGN)
    if(EXISTS "${source}/${dir}/${header}")
      string(MAKE_C_IDENTIFIER "parbench_fetched_${lower}" lib)
      add_library(${lib} INTERFACE)
      target_include_directories(${lib} SYSTEM INTERFACE "${source}/${dir}")
      add_library(${target} ALIAS ${lib})
      parbench_fetched_from(${name} "${url}" from)
      parbench_note_fetched("${name} from ${from}")
      return()
    endif()
  endforeach()
  string(REPLACE ";" " or " dirs "${ARGN}")
  message(FATAL_ERROR "${name}: no ${header} under ${dirs} of ${source} (the folder FetchContent gave; "
                      "FETCHCONTENT_SOURCE_DIR_<NAME> must hold the upstream layout)")
endfunction()

# A required header-only library: find_package first (unless PARBENCH_FETCH_DEPS=ON), else fetched where allowed.
function(parbench_header_dependency package target fetch_name url sha256 header debian rhel)
  if(NOT PARBENCH_FETCH_DEPS STREQUAL "ON")
    find_package(${package} CONFIG QUIET)
  endif()
  if(TARGET ${target})
    return()
  endif()
  if(PARBENCH_FETCH_DEPS STREQUAL "OFF")
    parbench_dependency_missing(${package} "${debian}" "${rhel}")
  endif()
  parbench_fetch_headers(${fetch_name} ${target} ${url} ${sha256} ${header} ${ARGN})
endfunction()

parbench_header_dependency(CLI11 CLI11::CLI11 CLI11 ${PARBENCH_CLI11_URL} ${PARBENCH_CLI11_SHA256}
                           CLI/CLI.hpp libcli11-dev "cli11-devel (EPEL)" include)
parbench_header_dependency(nlohmann_json nlohmann_json::nlohmann_json nlohmann_json ${PARBENCH_JSON_URL}
                           ${PARBENCH_JSON_SHA256} nlohmann/json.hpp nlohmann-json3-dev "json-devel (EPEL)"
                           single_include include)

find_package(Threads REQUIRED)

# Boost.Context switches the simt device's fibers (device/simt, linked statically so the switch is a direct call
# rather than one through the PLT). Optional: without it the fibers switch with POSIX ucontext, which makes a
# signal-mask system call per switch. 1.66: the fcontext API used.
set(_pb_static_libs ${Boost_USE_STATIC_LIBS})
set(Boost_USE_STATIC_LIBS ON)
find_package(Boost 1.66 QUIET COMPONENTS context)
set(Boost_USE_STATIC_LIBS ${_pb_static_libs})
set(PARBENCH_HAVE_BOOST_CONTEXT ${Boost_FOUND})
if(NOT Boost_FOUND)
  set(_pb_found "not found")
  if(Boost_VERSION_STRING)
    set(_pb_found "found Boost ${Boost_VERSION_STRING} without a static context library")
  endif()
  parbench_leave_out("simt's Boost.Context fibers"
                     "${_pb_found}; the simt device switches with ucontext, about ten times slower: "
                     "Debian/Ubuntu libboost-context-dev, RHEL/Rocky boost-devel and boost-static (CRB)")
endif()

# fast-cpp-csv-parser: one header, included as <libfccp/csv.h> (Debian's layout), behind the target parbench::fccp.
# Found (PARBENCH_FCCP_INCLUDE_DIR: the folder holding libfccp/), else fetched where allowed: upstream ships csv.h
# alone at its top, so the fetch copies it into a libfccp/ folder of the build tree. The URL names a commit, which
# fixes its content; FETCHCONTENT_SOURCE_DIR_FCCP takes a local folder holding csv.h instead.
set(PARBENCH_FCCP_URL
    https://raw.githubusercontent.com/ben-strasser/fast-cpp-csv-parser/5a417973b4cea674a5e4a3b88a23098a2ab75479/csv.h)
if(NOT PARBENCH_FETCH_DEPS STREQUAL "ON")
  find_path(PARBENCH_FCCP_INCLUDE_DIR libfccp/csv.h)
endif()
add_library(parbench_fccp INTERFACE)
add_library(parbench::fccp ALIAS parbench_fccp)
if(PARBENCH_FCCP_INCLUDE_DIR AND NOT PARBENCH_FETCH_DEPS STREQUAL "ON")
  target_include_directories(parbench_fccp SYSTEM INTERFACE "${PARBENCH_FCCP_INCLUDE_DIR}")
elseif(PARBENCH_FETCH_DEPS STREQUAL "OFF")
  parbench_dependency_missing("fast-cpp-csv-parser's header libfccp/csv.h" libfccp-dev
                              "not packaged: csv.h into DIR/libfccp/, then -DPARBENCH_FCCP_INCLUDE_DIR=DIR")
else()
  FetchContent_Declare(fccp URL ${PARBENCH_FCCP_URL} DOWNLOAD_NO_EXTRACT TRUE SOURCE_SUBDIR parbench-headers-only)
  FetchContent_MakeAvailable(fccp)
  if(NOT EXISTS "${fccp_SOURCE_DIR}/csv.h")
    message(FATAL_ERROR "fccp: no csv.h in ${fccp_SOURCE_DIR} (the folder FetchContent gave; "
                        "FETCHCONTENT_SOURCE_DIR_FCCP must hold csv.h)")
  endif()
  file(COPY "${fccp_SOURCE_DIR}/csv.h" DESTINATION "${CMAKE_BINARY_DIR}/_deps/fccp-include/libfccp")
  target_include_directories(parbench_fccp SYSTEM INTERFACE "${CMAKE_BINARY_DIR}/_deps/fccp-include")
  parbench_fetched_from(fccp ${PARBENCH_FCCP_URL} _pb_from)
  parbench_note_fetched("fast-cpp-csv-parser from ${_pb_from}")
endif()

# GoogleTest (with GoogleMock): only the tests. Fetched with PARBENCH_FETCH_DEPS=ON, built from its source with its
# own CMakeLists (Debian ships that source as /usr/src/googletest, which FETCHCONTENT_SOURCE_DIR_GOOGLETEST takes).
set(PARBENCH_HAVE_GTEST OFF)
if(PARBENCH_FETCH_DEPS STREQUAL "ON")
  set(INSTALL_GTEST OFF CACHE BOOL "Install GoogleTest (not for parbench's fetched copy)")
  set(BUILD_GMOCK ON CACHE BOOL "Build GoogleMock (the tests use it)")
  FetchContent_Declare(googletest URL ${PARBENCH_GTEST_URL} URL_HASH SHA256=${PARBENCH_GTEST_SHA256})
  FetchContent_MakeAvailable(googletest)
  if(NOT TARGET GTest::gtest_main OR NOT TARGET GTest::gmock)
    message(FATAL_ERROR "the fetched GoogleTest (${googletest_SOURCE_DIR}) made no GTest::gtest_main and "
                        "GTest::gmock targets")
  endif()
  set(PARBENCH_HAVE_GTEST ON)
  parbench_fetched_from(googletest ${PARBENCH_GTEST_URL} _pb_from)
  parbench_note_fetched("googletest from ${_pb_from}")
else()
  find_package(GTest QUIET)
  if(TARGET GTest::gtest_main AND TARGET GTest::gmock)
    set(PARBENCH_HAVE_GTEST ON)
  elseif(TARGET GTest::gtest_main)
    parbench_leave_out(tests "GoogleTest found without GoogleMock: Debian/Ubuntu libgmock-dev, RHEL/Rocky "
                             "gmock-devel; -DPARBENCH_FETCH_DEPS=ON fetches both")
  else()
    parbench_leave_out(tests "GoogleTest not found; -DPARBENCH_FETCH_DEPS=ON fetches it")
  endif()
endif()

# Google Benchmark: only bench_kernels. Not fetched: a compiled library, packaged wherever the others are.
find_package(benchmark QUIET)
set(PARBENCH_HAVE_BENCHMARK OFF)
if(TARGET benchmark::benchmark)
  set(PARBENCH_HAVE_BENCHMARK ON)
else()
  parbench_leave_out(bench_kernels "Google Benchmark not found: Debian/Ubuntu libbenchmark-dev, RHEL/Rocky "
                                   "google-benchmark-devel (EPEL)")
endif()
