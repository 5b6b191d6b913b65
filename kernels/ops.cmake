# kernels/ops.cmake: the ops, each a pair of files: <op>.cu (kernels and launchers), built for simt (through the
# emulator) and cuda (nvcc), and <op>.cpp (its reference, the checks and dispatch of its ops on tensors, and its
# workloads for the op table), built into parbench_kernels with the shared dispatch and table code. Both lists are
# globbed (re-globbed at build time) so that a new op needs no edit here.
file(GLOB PB_OP_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cu)
file(GLOB PB_OP_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
list(REMOVE_ITEM PB_OP_HOST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/matmul_cublas.cpp)  # cuda only, below
list(REMOVE_ITEM PB_OP_HOST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/matmul_cublaslt.cpp)
list(REMOVE_ITEM PB_OP_HOST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/op_params.cpp      # their own library, below
     ${CMAKE_CURRENT_SOURCE_DIR}/op_list.cpp)

# What ops take that needs no kernels (workload shapes, AdamW settings, the table's rows), apart: command-line
# checks, training configurations and the predictor link it without the kernels.
add_library(parbench_op_params STATIC op_params.cpp op_list.cpp)
target_include_directories(parbench_op_params PUBLIC ${CMAKE_SOURCE_DIR})

add_library(parbench_kernels STATIC ${PB_OP_HOST_SOURCES})
target_link_libraries(parbench_kernels PUBLIC parbench_op_params parbench_core)
if(PARBENCH_CUDA_EMULATED)  # dispatch.cpp declares each op's tensors to the emulated GPU's hazard checker
  target_compile_definitions(parbench_kernels PRIVATE PARBENCH_CUDA_EMULATED=1)
endif()

# The kernels built for simt (through the emulator) and, with CUDA, for cuda.
parbench_add_kernels(parbench_ops ${PB_OP_SOURCES})
target_link_libraries(parbench_kernels PUBLIC parbench_ops_simt)

if(PARBENCH_HAVE_CUDA)
  target_sources(parbench_kernels PRIVATE matmul_cublas.cpp matmul_cublaslt.cpp)
  target_link_libraries(parbench_kernels PUBLIC parbench_ops_cuda parbench_cublas)
endif()
