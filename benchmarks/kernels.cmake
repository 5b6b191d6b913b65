# Kernel benchmarks: every op and matmul version on Google Benchmark, against references and cuBLAS. Without Google
# Benchmark there is no bench_kernels (the configure summary says so).
if(PARBENCH_HAVE_BENCHMARK)
  add_executable(bench_kernels ${CMAKE_CURRENT_SOURCE_DIR}/bench_kernels.cpp
                               ${CMAKE_CURRENT_SOURCE_DIR}/kernels_bench/rows.cpp)
  target_link_libraries(bench_kernels PRIVATE parbench_program_options parbench_kernels parbench_profiles
                        benchmark::benchmark parbench_app)
endif()
