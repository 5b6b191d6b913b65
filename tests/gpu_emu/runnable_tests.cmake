# Read by ctest (parbench_runnable_tests): training with --check on emulated GPUs for every combination bench_train
# --list-runnable prints, under the fuzz seeds of run_seeds.sh, ranks as threads and (with MPI) as processes.
# Batches: data-parallel schemes accumulate two microbatches of 2 per step, pipelines run 4 microbatches of 1, mp
# passes the whole batch of 4. They run NCCL (the default here) with PARBENCH_EMU_LEGACY_STREAM=error: training,
# its set-up and the --check reference never use a GPU's legacy default stream (the hand-written algorithms and
# MPI's staging still do; their tests, in CMakeLists.txt, allow it).
parbench_runnable("${pb_bench_train}" gpu_train)
function(pb_runnable_gpu_test name)
  add_test(${name} "${pb_run_seeds}" "${pb_seeds}" ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS gpu TIMEOUT 600
                       ENVIRONMENT "PARBENCH_EMU_WAIT_TIMEOUT=120;PARBENCH_EMU_LEGACY_STREAM=error")
endfunction()
foreach(name IN LISTS gpu_train_names)
  set(args ${gpu_train_${name}_args})
  set(ranks ${gpu_train_${name}_ranks})
  parbench_runnable_layers(2 ${gpu_train_${name}_layers} layers)
  list(FIND args --microbatches pipeline)
  set(micro 2)
  if(gpu_train_${name}_family STREQUAL "whole")
    set(micro 4)
  elseif(pipeline GREATER -1)
    set(micro 1)
  endif()
  # The GPT-style model, and the Llama-style one (grouped-query attention, rotary, SwiGLU, RMSNorm).
  foreach(model IN ITEMS gpt llama)
    set(prefix gpu_train_)
    if(model STREQUAL "llama")
      set(prefix gpu_train_llama_)
    endif()
    set(run "${pb_bench_train}" ${pb_${model}_model} ${args} --layers ${layers} --micro-batch ${micro})
    pb_runnable_gpu_test(${prefix}${name} ${run} --ranks ${ranks})
    if(pb_have_mpi)
      pb_runnable_gpu_test(${prefix}mpi_${name} "${pb_mpiexec}" --allow-run-as-root --oversubscribe -np ${ranks} ${run})
    endif()
  endforeach()
endforeach()
