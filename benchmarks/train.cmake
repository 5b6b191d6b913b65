# bench_train: the training driver over every scheme (options in train/options.cpp, a library the fuzz target
# links too, with the schemes' and models' facts but not their code; measurement and report in train/).
add_library(parbench_train_options STATIC train/options.cpp)
target_link_libraries(parbench_train_options PUBLIC parbench_scheme_kinds parbench_model_config parbench_schedule parbench_app)
add_executable(bench_train bench_train.cpp train/measure.cpp train/report.cpp train/simulate.cpp train/search.cpp)
target_link_libraries(bench_train PRIVATE parbench_train_options parbench_parallel parbench_predict parbench_app)
