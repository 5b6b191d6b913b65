# bench_train: the training driver over every scheme (options here, measurement and report in train/).
add_executable(bench_train bench_train.cpp train/measure.cpp train/report.cpp train/simulate.cpp train/search.cpp)
target_link_libraries(bench_train PRIVATE parbench_parallel parbench_predict parbench_app)
