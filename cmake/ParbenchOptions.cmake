# Feature switches. Each of PARBENCH_CUDA / PARBENCH_MPI / PARBENCH_NCCL is AUTO, ON or OFF:
# AUTO turns the part on when its toolkit is found, ON fails when it is missing, OFF skips it.
foreach(part CUDA MPI NCCL)
  set(PARBENCH_${part} AUTO CACHE STRING "Build the ${part} parts: AUTO, ON or OFF")
  set_property(CACHE PARBENCH_${part} PROPERTY STRINGS AUTO ON OFF)
  if(NOT PARBENCH_${part} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "PARBENCH_${part}=${PARBENCH_${part}} is not valid; use AUTO, ON or OFF")
  endif()
endforeach()
option(PARBENCH_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(parbench_require part found what)
  if(PARBENCH_${part} STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "PARBENCH_${part}=ON but ${what} was not found")
  endif()
endfunction()

# --- CUDA: nvcc from PATH or /usr/local/cuda.
set(PARBENCH_HAVE_CUDA OFF)
if(NOT PARBENCH_CUDA STREQUAL "OFF")
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

# --- NCCL: no CMake package; nccl.h and libnccl beside the CUDA toolkit.
set(PARBENCH_HAVE_NCCL OFF)
if(NOT PARBENCH_NCCL STREQUAL "OFF" AND PARBENCH_HAVE_CUDA)
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

# --- NVTX3 is header-only; without it ranges compile to nothing.
set(PARBENCH_HAVE_NVTX OFF)
find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
if(NVTX3_INCLUDE_DIR)
  set(PARBENCH_HAVE_NVTX ON)
endif()

if(PARBENCH_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
endif()

message(STATUS "parbench: CUDA ${PARBENCH_HAVE_CUDA} (${CMAKE_CUDA_COMPILER} archs ${CMAKE_CUDA_ARCHITECTURES}), "
               "MPI ${PARBENCH_HAVE_MPI} (${MPIEXEC_EXECUTABLE}), NCCL ${PARBENCH_HAVE_NCCL}, "
               "NVTX ${PARBENCH_HAVE_NVTX}, sanitizers ${PARBENCH_SANITIZE}")
