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

# --- CUDA: nvcc from PATH or /usr/local/cuda; or the emulated GPU, which needs only the toolkit's headers.
set(PARBENCH_HAVE_CUDA OFF)
set(PARBENCH_CUDA_EMULATED OFF)
set(PARBENCH_CUDA_HAS_SM90 OFF)
if(PARBENCH_CUDA STREQUAL "EMULATED")
  find_path(CUDA_RUNTIME_INCLUDE_DIR cuda_runtime_api.h HINTS ENV CUDA_HOME PATH_SUFFIXES include
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
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
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
endif()

# --- MPI
set(PARBENCH_HAVE_MPI OFF)
if(NOT PARBENCH_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(PARBENCH_HAVE_MPI ON)
  endif()
  parbench_require(MPI "${PARBENCH_HAVE_MPI}" "MPI (OpenMPI)")
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

# --- NCCL: no CMake package; nccl.h and libnccl beside the CUDA toolkit. The emulated GPU build links the
# emulated NCCL (device/emu/nccl.cpp) against the same header.
set(PARBENCH_HAVE_NCCL OFF)
if(NOT PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_CUDA_EMULATED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  if(NCCL_INCLUDE_DIR)
    set(PARBENCH_HAVE_NCCL ON)
    add_library(parbench_nccl INTERFACE)
    target_include_directories(parbench_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(parbench_nccl INTERFACE parbench_gpu_emu)
  endif()
elseif(NOT PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(PARBENCH_HAVE_NCCL ON)
    add_library(parbench_nccl INTERFACE)
    target_include_directories(parbench_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(parbench_nccl INTERFACE ${NCCL_LIBRARY})
  endif()
endif()
parbench_require(NCCL "${PARBENCH_HAVE_NCCL}" "NCCL (nccl.h and libnccl beside the CUDA toolkit)")

# NCCL's device API (2.28+: nccl_device.h, symmetric windows): the collective benches' -D kernels and -R
# registration. Where it is missing, PARBENCH_NCCL_DEVICE_API_WHY says why (the benches refuse -D 1|2 and -R 1|2).
set(PARBENCH_NCCL_DEVICE_API OFF)
set(PARBENCH_NCCL_DEVICE_API_WHY "this build has no NCCL")
if(PARBENCH_HAVE_NCCL AND PARBENCH_CUDA_EMULATED)
  set(PARBENCH_NCCL_DEVICE_API_WHY "emulated NCCL")
elseif(PARBENCH_HAVE_NCCL)
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _pb_nccl_version REGEX "^#define NCCL_(MAJOR|MINOR) +[0-9]+")
  string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _pb_nccl_major "${_pb_nccl_version}")
  string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _pb_nccl_minor "${_pb_nccl_version}")
  if("${_pb_nccl_major}.${_pb_nccl_minor}" VERSION_GREATER_EQUAL 2.28 AND EXISTS "${NCCL_INCLUDE_DIR}/nccl_device.h")
    set(PARBENCH_NCCL_DEVICE_API ON)
    set(PARBENCH_NCCL_DEVICE_API_WHY "")
  elseif("${_pb_nccl_major}.${_pb_nccl_minor}" VERSION_GREATER_EQUAL 2.28)
    set(PARBENCH_NCCL_DEVICE_API_WHY "NCCL ${_pb_nccl_major}.${_pb_nccl_minor} found without nccl_device.h")
  else()
    set(PARBENCH_NCCL_DEVICE_API_WHY "NCCL ${_pb_nccl_major}.${_pb_nccl_minor} found, 2.28 needed")
  endif()
endif()

# --- NVTX3 is header-only; without it ranges compile to nothing.
set(PARBENCH_HAVE_NVTX OFF)
find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
if(NVTX3_INCLUDE_DIR)
  set(PARBENCH_HAVE_NVTX ON)
endif()

# parbench-plot and its tests need Boost and gnuplot-iostream; a machine that only runs the benchmarks (a GPU machine
# whose image lacks them, scripts/gpu_session.sh) builds without them.
option(PARBENCH_PLOTS "Build parbench-plot and its tests (Boost, gnuplot-iostream)" ON)

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
else()
  set(_pb_cuda_words "${PARBENCH_HAVE_CUDA} (${CMAKE_CUDA_COMPILER} archs ${CMAKE_CUDA_ARCHITECTURES})")
endif()
set(_pb_nccl_words "${PARBENCH_HAVE_NCCL}")
if(PARBENCH_HAVE_NCCL AND PARBENCH_CUDA_EMULATED)
  set(_pb_nccl_words "ON (emulated)")
endif()
if(PARBENCH_NCCL_DEVICE_API)
  string(APPEND _pb_nccl_words " with device API")
endif()
message(STATUS "parbench: CUDA ${_pb_cuda_words}, "
               "MPI ${PARBENCH_HAVE_MPI} (${MPIEXEC_EXECUTABLE}), NCCL ${_pb_nccl_words}, "
               "NVTX ${PARBENCH_HAVE_NVTX}, sanitizers ${PARBENCH_SANITIZE}")
