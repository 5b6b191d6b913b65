# bench_train: the training driver over every scheme.
add_executable(bench_train bench_train.cpp)
target_link_libraries(bench_train PRIVATE parbench_parallel)
