# Collective benchmarks: one shared engine, and bench_<name> for every collective of the table, each the same main
# told its collective by name (a name the table lacks fails at start, and in test_coll_table).
set(PARBENCH_CB ${CMAKE_CURRENT_SOURCE_DIR}/collective_bench)
add_library(parbench_collective_bench STATIC ${PARBENCH_CB}/engine.cpp ${PARBENCH_CB}/engine_notes.cpp
            ${PARBENCH_CB}/expectation.cpp ${PARBENCH_CB}/outliers.cpp ${PARBENCH_CB}/nccl_tests_output.cpp
            ${PARBENCH_CB}/report_json.cpp ${PARBENCH_CB}/nccl_choices.cpp ${PARBENCH_CB}/sweep_points.cpp
            ${PARBENCH_CB}/json_stream.cpp ${PARBENCH_CB}/per_iter.cpp ${PARBENCH_CB}/sweep_control.cpp
            ${PARBENCH_CB}/timing.cpp)
target_link_libraries(parbench_collective_bench PUBLIC parbench_program_options parbench_collectives
                      parbench_profiles parbench_app parbench_collective_model nlohmann_json::nlohmann_json)
target_include_directories(parbench_collective_bench PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
include(${PROJECT_SOURCE_DIR}/collectives/table/collectives.cmake)
foreach(c IN LISTS PARBENCH_COLLECTIVES)
  add_executable(bench_${c} ${CMAKE_CURRENT_SOURCE_DIR}/bench_collective.cpp)
  target_compile_definitions(bench_${c} PRIVATE PARBENCH_BENCH_COLLECTIVE="${c}")
  target_link_libraries(bench_${c} PRIVATE parbench_collective_bench)
endforeach()
# The harness's cost beside bare MPI loops (README "Harness overhead").
if(PARBENCH_HAVE_MPI)
  add_executable(bench_harness_overhead ${CMAKE_CURRENT_SOURCE_DIR}/bench_harness_overhead.cpp)
  target_link_libraries(bench_harness_overhead PRIVATE parbench_collective_bench parbench_program_options)
endif()
