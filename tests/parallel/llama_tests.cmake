# Read by ctest (parbench_runnable_tests): the Llama-style model (eight query heads sharing two kv heads, rotary
# positions, SwiGLU, RMSNorm) trained by bench_train with --check for every combination bench_train --list-runnable
# prints, on cpu rank threads at 2 and 4 ranks and (with MPI) under mpirun. A 2-rank combination grows to 4 ranks
# by its pipeline (--pp 4, twice the layers) or, without one, by data parallelism around it (tp and sp with dp 2).
parbench_runnable("${pb_bench_train}" llama)
set(pb_mpirun "${pb_mpiexec}" --allow-run-as-root --oversubscribe -np)
foreach(name IN LISTS llama_names)
  set(args ${llama_${name}_args})
  set(ranks ${llama_${name}_ranks})
  set(need ${llama_${name}_layers})
  if(ranks EQUAL 1)  # single: the reference every --check runs anyway
    continue()
  endif()
  parbench_runnable_layers(2 ${need} layers)
  set(batch --global-batch 8)
  if(llama_${name}_family STREQUAL "data")
    list(APPEND batch --micro-batch 1)
  endif()
  add_test(train_llama_${name} "${pb_bench_train}" --device cpu --ranks ${ranks} ${pb_llama} --layers ${layers}
           ${batch} ${args})
  set(tests train_llama_${name})
  if(ranks EQUAL 2)
    set(args4 ${args})
    set(layers4 ${layers})
    list(FIND args4 --pp at)
    if(at GREATER -1)
      math(EXPR at_n "${at} + 1")
      list(REMOVE_AT args4 ${at_n})
      list(INSERT args4 ${at_n} 4)
      math(EXPR twice "2 * ${need}")
      parbench_runnable_layers(4 ${twice} layers4)
    endif()
    add_test(train_llama4_${name} "${pb_bench_train}" --device cpu --ranks 4 ${pb_llama} --layers ${layers4}
             ${batch} ${args4})
    list(APPEND tests train_llama4_${name})
  endif()
  if(pb_have_mpi)
    add_test(train_llama_mpi_${name} ${pb_mpirun} ${ranks} "${pb_bench_train}" --device cpu ${pb_llama}
             --layers ${layers} ${batch} ${args})
    # Label mpi, as every mpirun test: MPI's own allocations would read as leaks under the sanitizer run's units.
    set_tests_properties(train_llama_mpi_${name} PROPERTIES TIMEOUT 120 LABELS mpi)
  endif()
  set_tests_properties(${tests} PROPERTIES TIMEOUT 120 LABELS unit)
endforeach()
