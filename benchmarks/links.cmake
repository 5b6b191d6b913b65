# bench_links: every pair of ranks' latency and bandwidth, the slow ranks, nodes and pairs named. The pair rounds
# and the analysis are a library of their own, which the unit tests take without the program.
add_library(parbench_links STATIC ${CMAKE_CURRENT_SOURCE_DIR}/links/pair_rounds.cpp
            ${CMAKE_CURRENT_SOURCE_DIR}/links/link_analysis.cpp)
target_link_libraries(parbench_links PUBLIC parbench_core)
add_executable(bench_links ${CMAKE_CURRENT_SOURCE_DIR}/bench_links.cpp)
target_link_libraries(bench_links PRIVATE parbench_links parbench_program_options parbench_collectives parbench_app)
