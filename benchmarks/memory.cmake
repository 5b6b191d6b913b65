# Device memory bandwidth: the ceiling for collectives on the same device.
add_executable(bench_memcpy bench_memcpy.cpp)
target_link_libraries(bench_memcpy PRIVATE parbench_program_options parbench_profiles)
