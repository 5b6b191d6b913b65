# Feature switches. Each of PARBENCH_CUDA / PARBENCH_MPI / PARBENCH_NCCL is AUTO, ON or OFF:
# AUTO turns the part on when its toolkit is found, ON fails when it is missing, OFF skips it.
# PARBENCH_CUDA=EMULATED builds the cuda device against the emulated GPU (device/emu/): the same sources, the
# CUDA toolkit's headers, our runtime and cuBLAS instead of NVIDIA's libraries; no nvcc or GPU needed.
foreach(part CUDA MPI NCCL)
  set(PARBENCH_${part} AUTO CACHE STRING "Build the ${part} parts: AUTO, ON or OFF")
  set_property(CACHE PARBENCH_${part} PROPERTY STRINGS AUTO ON OFF)
  set(accepted "AUTO|ON|OFF")
  if(part STREQUAL "CUDA")
    set(accepted "AUTO|ON|OFF|EMULATED")
  endif()
  if(NOT PARBENCH_${part} MATCHES "^(${accepted})$")
    string(REPLACE "|" ", " accepted_words "${accepted}")
    message(FATAL_ERROR "PARBENCH_${part}=${PARBENCH_${part}} is not valid; use ${accepted_words}")
  endif()
endforeach()
# PARBENCH_SANITIZE: OFF; ON or address (AddressSanitizer + UndefinedBehaviorSanitizer); thread (ThreadSanitizer).
set(PARBENCH_SANITIZE OFF CACHE STRING "Sanitizers: OFF, ON/address (ASan + UBSan) or thread (TSan)")
set_property(CACHE PARBENCH_SANITIZE PROPERTY STRINGS OFF ON address thread)
if(NOT PARBENCH_SANITIZE MATCHES "^(OFF|ON|address|thread|0|1|FALSE|TRUE|NO|YES)$")
  message(FATAL_ERROR "PARBENCH_SANITIZE=${PARBENCH_SANITIZE} is not valid; use OFF, ON (= address) or thread")
endif()

function(parbench_require part found what)
  if(PARBENCH_${part} STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "PARBENCH_${part}=ON but ${what} was not found")
  endif()
endfunction()

# CUDA_HOME, NCCL_HOME (and MPI_HOME, which FindMPI reads itself) as nccl-tests takes them: from the environment
# or -D, the -D one first.
foreach(home CUDA_HOME NCCL_HOME)
  if(NOT DEFINED ${home} AND DEFINED ENV{${home}})
    set(${home} "$ENV{${home}}")
  endif()
endforeach()

# --- CUDA: nvcc from CUDA_HOME, else PATH or /usr/local/cuda; or the emulated GPU, which needs only the toolkit's
# headers. 12.0: nvcc's -std=c++20.
set(PARBENCH_HAVE_CUDA OFF)
set(PARBENCH_CUDA_EMULATED OFF)
set(PARBENCH_CUDA_HAS_SM90 OFF)
if(PARBENCH_CUDA STREQUAL "EMULATED")
  find_path(CUDA_RUNTIME_INCLUDE_DIR cuda_runtime_api.h HINTS ${CUDA_HOME} PATH_SUFFIXES include
            PATHS /usr/local/cuda/include)
  find_path(CUBLAS_INCLUDE_DIR cublas_v2.h HINTS ${CUDA_RUNTIME_INCLUDE_DIR} PATHS /usr/local/cuda/include)
  if(NOT CUDA_RUNTIME_INCLUDE_DIR OR NOT CUBLAS_INCLUDE_DIR)
    message(FATAL_ERROR "PARBENCH_CUDA=EMULATED needs the CUDA toolkit's headers (cuda_runtime_api.h, cublas_v2.h)")
  endif()
  set(CUDAToolkit_INCLUDE_DIRS ${CUDA_RUNTIME_INCLUDE_DIR})
  set(PARBENCH_HAVE_CUDA ON)
  set(PARBENCH_CUDA_EMULATED ON)
  # The emulator finds its NVTX hooks with dlsym and names call sites with dladdr.
  set(CMAKE_ENABLE_EXPORTS ON)
elseif(NOT PARBENCH_CUDA STREQUAL "OFF")
  if(CUDA_HOME AND NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    if(NOT EXISTS "${CUDA_HOME}/bin/nvcc")
      message(FATAL_ERROR "CUDA_HOME=${CUDA_HOME} has no bin/nvcc")
    endif()
    set(CMAKE_CUDA_COMPILER "${CUDA_HOME}/bin/nvcc")
    set(CUDAToolkit_ROOT "${CUDA_HOME}")  # its headers and libraries, not another toolkit's
  elseif(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_pb_nvcc nvcc)
    if(NOT _pb_nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
      message(FATAL_ERROR "CUDA 12.0 or newer is needed (nvcc -std=c++20); ${CMAKE_CUDA_COMPILER} is "
                          "${CMAKE_CUDA_COMPILER_VERSION}. Point CUDA_HOME at a newer toolkit, or configure with "
                          "-DPARBENCH_CUDA=OFF")
    endif()
    # CMake 3.25 knows no C++20 flag for nvcc (CUDA_STANDARD 20 fails at generate time); nvcc 13 takes -std=c++20.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(PARBENCH_HAVE_CUDA ON)
    # Whether the device code holds sm_90 SASS, which the static SASS check reads (tests/kernels).
    foreach(_pb_arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
      if(_pb_arch MATCHES "^90a?(-real)?$")
        set(PARBENCH_CUDA_HAS_SM90 ON)
      endif()
    endforeach()
  endif()
  parbench_require(CUDA "${PARBENCH_HAVE_CUDA}" "a CUDA toolkit (nvcc)")
  if(NOT PARBENCH_HAVE_CUDA)
    parbench_leave_out("the cuda device: --device cuda, NCCL, cuBLAS rows"
                       "no nvcc found: set CUDA_HOME or put nvcc on PATH")
  endif()
else()
  parbench_leave_out("the cuda device: --device cuda, NCCL, cuBLAS rows" "PARBENCH_CUDA=OFF")
endif()

# --- MPI: FindMPI looks in MPI_HOME (-D or environment) first. 3.0: the nonblocking collectives
# (MPI_Iallreduce, ...) and MPI_Comm_split_type.
set(PARBENCH_HAVE_MPI OFF)
set(_pb_mpi_disables "MPI: mpirun launches, the mpi transport, bench_harness_overhead")
if(NOT PARBENCH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND AND MPI_C_VERSION VERSION_LESS 3.0)
    set(_pb_why "MPI ${MPI_C_VERSION} found (${MPI_C_LIBRARIES}), MPI 3.0 or newer needed")
    if(PARBENCH_MPI STREQUAL "ON")
      message(FATAL_ERROR "PARBENCH_MPI=ON but ${_pb_why}: point MPI_HOME at a newer one")
    endif()
    parbench_leave_out("${_pb_mpi_disables}" "${_pb_why}")
  elseif(MPI_C_FOUND)
    set(PARBENCH_HAVE_MPI ON)
  else()
    parbench_require(MPI OFF "MPI (Open MPI: set MPI_HOME to its prefix)")
    parbench_leave_out("${_pb_mpi_disables}" "MPI not found: set MPI_HOME or put mpicc on PATH")
  endif()
else()
  parbench_leave_out("${_pb_mpi_disables}" "PARBENCH_MPI=OFF")
endif()

# The CUDA runtime and cuBLAS (with cuBLASLt) every target links: NVIDIA's, or the emulated GPU's (device/emu/).
if(PARBENCH_CUDA_EMULATED)
  add_library(parbench_cudart INTERFACE)
  target_include_directories(parbench_cudart INTERFACE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(parbench_cudart INTERFACE parbench_gpu_emu)
  add_library(parbench_cublas INTERFACE)
  target_link_libraries(parbench_cublas INTERFACE parbench_cudart)
elseif(PARBENCH_HAVE_CUDA)
  add_library(parbench_cudart INTERFACE)
  target_link_libraries(parbench_cudart INTERFACE CUDA::cudart)
  add_library(parbench_cublas INTERFACE)
  target_link_libraries(parbench_cublas INTERFACE CUDA::cublas CUDA::cublasLt)
endif()

# --- NCCL: no CMake package; nccl.h and libnccl in NCCL_HOME (its include/ and lib/ or lib64/), else beside the
# CUDA toolkit. The emulated GPU build links the emulated NCCL (device/emu/nccl.cpp) against the same header.
# 2.18: ncclCommSplit (the device API, 2.28, is checked apart below).
set(PARBENCH_HAVE_NCCL OFF)
set(_pb_nccl_hints ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
set(_pb_nccl_lib_hints ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
set(_pb_nccl_only)
if(NCCL_HOME)
  set(_pb_nccl_hints "${NCCL_HOME}/include")
  set(_pb_nccl_lib_hints "${NCCL_HOME}/lib" "${NCCL_HOME}/lib64")
  set(_pb_nccl_only NO_DEFAULT_PATH)
endif()
if(NOT "${NCCL_HOME}" STREQUAL "${_PARBENCH_NCCL_HOME_SEEN}")  # another NCCL_HOME: look again
  unset(NCCL_INCLUDE_DIR CACHE)
  unset(NCCL_LIBRARY CACHE)
  set(_PARBENCH_NCCL_HOME_SEEN "${NCCL_HOME}" CACHE INTERNAL "The NCCL_HOME NCCL_INCLUDE_DIR was found with")
endif()
if(NOT PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_CUDA_EMULATED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_pb_nccl_hints} ${_pb_nccl_only})
  if(NCCL_INCLUDE_DIR)
    set(PARBENCH_HAVE_NCCL ON)
    add_library(parbench_nccl INTERFACE)
    target_include_directories(parbench_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(parbench_nccl INTERFACE parbench_gpu_emu)
  else()
    parbench_require(NCCL OFF "nccl.h (set NCCL_HOME, or put it beside the CUDA toolkit's headers)")
    parbench_leave_out("NCCL: the nccl transport and rows" "nccl.h not found: set NCCL_HOME")
  endif()
elseif(NOT PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_pb_nccl_hints} ${_pb_nccl_only})
  find_library(NCCL_LIBRARY nccl HINTS ${_pb_nccl_lib_hints} ${_pb_nccl_only})
  set(_pb_nccl_found "")
  if(NCCL_INCLUDE_DIR)
    file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _pb_nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR) +[0-9]+")
    string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _pb_major "${_pb_nccl_lines}")
    string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _pb_minor "${_pb_nccl_lines}")
    set(_pb_nccl_found "${_pb_major}.${_pb_minor}")
  endif()
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND _pb_nccl_found VERSION_LESS 2.18)
    set(_pb_why "NCCL ${_pb_nccl_found} found (${NCCL_INCLUDE_DIR}/nccl.h), 2.18 or newer needed")
    if(PARBENCH_NCCL STREQUAL "ON")
      message(FATAL_ERROR "PARBENCH_NCCL=ON but ${_pb_why}: point NCCL_HOME at a newer one")
    endif()
    parbench_leave_out("NCCL: the nccl transport and rows" "${_pb_why}")
  elseif(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(PARBENCH_HAVE_NCCL ON)
    add_library(parbench_nccl INTERFACE)
    target_include_directories(parbench_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(parbench_nccl INTERFACE ${NCCL_LIBRARY})
  elseif(NCCL_HOME)
    message(FATAL_ERROR "NCCL_HOME=${NCCL_HOME} holds no include/nccl.h with a libnccl in lib/ or lib64/")
  else()
    parbench_require(NCCL OFF "NCCL (set NCCL_HOME, or nccl.h and libnccl beside the CUDA toolkit)")
    parbench_leave_out("NCCL: the nccl transport and rows" "not found: set NCCL_HOME")
  endif()
elseif(PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_HAVE_CUDA)
  parbench_leave_out("NCCL: the nccl transport and rows" "PARBENCH_NCCL=OFF")
endif()
if(NOT PARBENCH_HAVE_CUDA)
  parbench_require(NCCL OFF "NCCL (it needs the cuda device, which this build has not)")
endif()

# NCCL's device API (2.28+: nccl_device.h, symmetric windows): the collective benches' -D kernels and -R
# registration. Where it is missing, PARBENCH_NCCL_DEVICE_API_WHY says why (the benches refuse -D 1|2 and -R 1|2).
set(PARBENCH_NCCL_DEVICE_API OFF)
set(PARBENCH_NCCL_DEVICE_API_WHY "this build has no NCCL")
if(PARBENCH_HAVE_NCCL AND PARBENCH_CUDA_EMULATED)
  set(PARBENCH_NCCL_DEVICE_API_WHY "emulated NCCL")
elseif(PARBENCH_HAVE_NCCL)  # _pb_nccl_found: nccl.h's version, read where NCCL was found above
  if(_pb_nccl_found VERSION_GREATER_EQUAL 2.28 AND EXISTS "${NCCL_INCLUDE_DIR}/nccl_device.h")
    set(PARBENCH_NCCL_DEVICE_API ON)
    set(PARBENCH_NCCL_DEVICE_API_WHY "")
  elseif(_pb_nccl_found VERSION_GREATER_EQUAL 2.28)
    set(PARBENCH_NCCL_DEVICE_API_WHY "NCCL ${_pb_nccl_found} found without nccl_device.h")
  else()
    set(PARBENCH_NCCL_DEVICE_API_WHY "NCCL ${_pb_nccl_found} found, 2.28 needed")
  endif()
endif()
if(PARBENCH_HAVE_NCCL AND NOT PARBENCH_NCCL_DEVICE_API)
  parbench_leave_out("NCCL's device API: -D 1|2 and -R 1|2 of the collective benches"
                     "${PARBENCH_NCCL_DEVICE_API_WHY}")
endif()

# --- NVTX3 is header-only; without it ranges compile to nothing.
set(PARBENCH_HAVE_NVTX OFF)
find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDA_HOME}/include
          /usr/local/cuda/include)
if(NVTX3_INCLUDE_DIR)
  set(PARBENCH_HAVE_NVTX ON)
else()
  parbench_leave_out("NVTX ranges: named ranges in Nsight Systems timelines"
                     "nvtx3/nvToolsExt.h not found: the CUDA toolkit's headers have it")
endif()

# parbench-plot and its tests need Boost.Iostreams and Boost.Filesystem and gnuplot-iostream (plots/): AUTO builds
# them when those are found, ON fails without them, OFF leaves them out (a GPU machine whose image lacks them,
# scripts/gpu_session.sh).
set(PARBENCH_PLOTS AUTO CACHE STRING "Build parbench-plot and its tests: AUTO, ON or OFF")
set_property(CACHE PARBENCH_PLOTS PROPERTY STRINGS AUTO ON OFF)

# The unit tests' executables (parbench_add_test in tests/): OFF leaves them out of the build and of ctest's list,
# keeping the tests of the programs and scripts (scripts/test.sh's default build: its unit tests run in the
# sanitizer build, so compiling them twice would only cost time).
option(PARBENCH_UNIT_TESTS "Build the unit-test executables and list their tests in ctest" ON)

# libFuzzer targets (tests/fuzz): everything compiled with clang's fuzzer instrumentation, ASan and UBSan; build
# only the `fuzz` target of such a tree (scripts/fuzz.sh does).
option(PARBENCH_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)
if(PARBENCH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PARBENCH_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang, not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()
if(PARBENCH_SANITIZE STREQUAL "thread")
  # ThreadSanitizer: the threads transport, DDP's communication thread, the pipeline and the simt fibers.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
elseif(PARBENCH_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()

# Code that runs no hot loop (the command lines, reports and plots of app/, plots/ and benchmarks/) is compiled
# without optimisation in the sanitizer builds, where -O0 halves its compile time; the libraries the tests and
# the emulated GPU exercise keep their optimisation. Test folders are unoptimised in every build (tests/).
set(PARBENCH_COLD_CODE_OPTIONS)
if(PARBENCH_SANITIZE)
  set(PARBENCH_COLD_CODE_OPTIONS $<$<COMPILE_LANGUAGE:CXX>:-O0>)
endif()

if(PARBENCH_CUDA_EMULATED)
  set(_pb_cuda_words "EMULATED (emulated GPUs on the CPU, headers ${CUDAToolkit_INCLUDE_DIRS})")
elseif(PARBENCH_HAVE_CUDA)
  set(_pb_cuda_words "ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION} ${CMAKE_CUDA_COMPILER} archs ${CMAKE_CUDA_ARCHITECTURES})")
else()
  set(_pb_cuda_words "OFF")
endif()
set(_pb_mpi_words "OFF")
if(PARBENCH_HAVE_MPI)
  set(_pb_mpi_words "ON (MPI ${MPI_C_VERSION}, ${MPIEXEC_EXECUTABLE})")
endif()
set(_pb_nccl_words "${PARBENCH_HAVE_NCCL}")
if(PARBENCH_HAVE_NCCL AND PARBENCH_CUDA_EMULATED)
  set(_pb_nccl_words "ON (emulated)")
elseif(PARBENCH_HAVE_NCCL)
  set(_pb_nccl_words "ON (${_pb_nccl_found}, ${NCCL_LIBRARY})")
endif()
if(PARBENCH_NCCL_DEVICE_API)
  string(APPEND _pb_nccl_words " with device API")
endif()
message(STATUS "parbench: CUDA ${_pb_cuda_words}, "
               "MPI ${_pb_mpi_words}, NCCL ${_pb_nccl_words}, "
               "NVTX ${PARBENCH_HAVE_NVTX}, sanitizers ${PARBENCH_SANITIZE}")
