# Collective benchmarks: one shared engine, one tiny main per collective.
add_library(parbench_collective_bench STATIC ${CMAKE_CURRENT_SOURCE_DIR}/collective_bench/engine.cpp)
target_link_libraries(parbench_collective_bench PUBLIC parbench_collectives parbench_profiles parbench_app
                      nlohmann_json::nlohmann_json)
target_include_directories(parbench_collective_bench PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
set(PARBENCH_COLLECTIVE_BENCHES
    allreduce allgather reducescatter broadcast reduce gather scatter alltoall sendrecv)
foreach(c IN LISTS PARBENCH_COLLECTIVE_BENCHES)
  add_executable(bench_${c} ${CMAKE_CURRENT_SOURCE_DIR}/bench_${c}.cpp)
  target_link_libraries(bench_${c} PRIVATE parbench_collective_bench)
endforeach()
