# Read by ctest (parbench_runnable_tests): bench_train end to end under mpirun for every combination that
# bench_train --list-runnable prints, each checked against the single-rank run. Data-parallel schemes at 2 ranks
# (MPI's collectives) and 4 ranks (with accumulation: 8 = 4 x 1 x 2); model-parallel ones at the ranks they need.
parbench_runnable("${pb_bench_train}" train)
set(pb_mpirun "${pb_mpiexec}" --allow-run-as-root --oversubscribe -np)
foreach(name IN LISTS train_names)
  set(args ${train_${name}_args})
  set(ranks ${train_${name}_ranks})
  if(train_${name}_family STREQUAL "data")
    if(ranks EQUAL 1)  # single: the reference every --check runs anyway
      continue()
    endif()
    add_test(train_mpi2_${name} ${pb_mpirun} 2 "${pb_bench_train}" --device cpu ${args} --global-batch 8
             --micro-batch 2 --impl mpi ${pb_train_tiny})
    add_test(train_mpi4_${name} ${pb_mpirun} 4 "${pb_bench_train}" --device cpu ${args} --global-batch 8
             --micro-batch 1 ${pb_train_tiny})
    set_tests_properties(train_mpi2_${name} train_mpi4_${name} PROPERTIES TIMEOUT 120 LABELS mpi)
  else()
    parbench_runnable_layers(4 ${train_${name}_layers} layers)
    add_test(train_mpi${ranks}_${name} ${pb_mpirun} ${ranks} "${pb_bench_train}" --device cpu ${pb_train_common}
             --layers ${layers} --global-batch 8 ${args})
    set_tests_properties(train_mpi${ranks}_${name} PROPERTIES TIMEOUT 120 LABELS mpi)
  endif()
endforeach()
