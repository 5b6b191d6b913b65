# kernels/ops.cmake: the ops (one .cu per op, references in ref/), built for cpu (references), simt
# (the same .cu through the emulator) and cuda (nvcc), and the dispatch library parbench_kernels.
set(PB_OP_SOURCES
  attention.cu convert.cu crossentropy.cu encoder.cu flash_attention.cu gelu.cu global_norm.cu
  layernorm.cu matmul.cu mse.cu optimizer.cu residual.cu)
list(TRANSFORM PB_OP_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)

add_library(parbench_kernels_ref STATIC
  ref/attention.cpp ref/convert.cpp ref/crossentropy.cpp ref/encoder.cpp ref/gelu.cpp ref/global_norm.cpp
  ref/layernorm.cpp ref/matmul.cpp ref/mse.cpp ref/optimizer.cpp ref/residual.cpp)
target_link_libraries(parbench_kernels_ref PUBLIC parbench_core)

add_library(parbench_kernels STATIC ops.cpp)
target_link_libraries(parbench_kernels PUBLIC parbench_kernels_ref parbench_core)

# The simt half needs the emulator (kernels/simt); without it the ops run on cpu and cuda only.
if(TARGET parbench_simt)
  parbench_add_kernels(parbench_ops ${PB_OP_SOURCES})
  target_link_libraries(parbench_kernels PUBLIC parbench_ops_simt)
  target_compile_definitions(parbench_kernels PUBLIC PARBENCH_KERNELS_HAVE_SIMT=1)
elseif(PARBENCH_HAVE_CUDA)
  add_library(parbench_ops_cuda STATIC ${PB_OP_SOURCES})
  target_link_libraries(parbench_ops_cuda PUBLIC parbench_cudart parbench_core)
  target_compile_options(parbench_ops_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
endif()

if(PARBENCH_HAVE_CUDA)
  target_sources(parbench_kernels PRIVATE matmul_cublas.cpp)
  target_link_libraries(parbench_kernels PUBLIC parbench_ops_cuda parbench_cublas)
endif()
