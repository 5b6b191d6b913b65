# Device memory bandwidth: the ceiling for collectives on the same device.
add_library(parbench_memcpy_options STATIC memcpy_options.cpp)
target_link_libraries(parbench_memcpy_options PUBLIC parbench_app)
add_executable(bench_memcpy bench_memcpy.cpp)
target_link_libraries(bench_memcpy PRIVATE parbench_memcpy_options parbench_profiles)
