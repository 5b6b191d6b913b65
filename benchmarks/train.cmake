# bench_train: the training driver over every scheme (options in train/options.cpp, with the schemes' and models'
# facts but not their code; measurement and report in train/).
add_executable(bench_train bench_train.cpp train/measure.cpp train/run_report.cpp train/simulate_command.cpp
               train/search_command.cpp train/runnable.cpp)
target_link_libraries(bench_train PRIVATE parbench_program_options parbench_parallel parbench_predict parbench_app)
