# Read by ctest, not by cmake (a TEST_INCLUDE_FILES script): the tests of the device-side collectives come from the
# registry's rows as bench_allreduce --list-impls prints them (name, kind, the collectives of each device-side
# implementation), so a new implementation is tested by its row alone. Set before it (CMakeLists.txt): pb_bin (the
# benches' folder), pb_run_seeds and pb_seeds (run_seeds.sh and its fuzz seeds), pb_sanitize, pb_mpiexec (empty
# without MPI), pb_has_nccl and pb_counted (counted.sh with its two programs).
#
# What each implementation gets: each collective it serves with the data check at 2, 3, 4 and 8 rank threads and
# under mpirun, every op and datatype. The sanitizer build keeps every op and datatype at 3 ranks only, where every
# kernel takes all its paths (the butterflies fold a rank in, avg divides inexactly, a tree root has two
# children), and at 2 and 4 sum and avg of float, bfloat16 and int8 (the element loops are the same at every rank
# count); 8 ranks, which cost most under the sanitizer, only in the other builds. Rooted ones at the last rank's
# root, broadcast, gather and scatter at every root at 3. A timed batch waits on the host once for all its
# launches; the planted race (a kernel that reads its peers' buffers without waiting for their signal) fails the
# data check under each fuzz seed, in its allreduce and its first other collective; a stalled rank is named by its
# peers' kernels' timeout.

function(pb_dev_test name)
  add_test(gpu_${name} ${pb_run_seeds} "${pb_seeds}" ${ARGN})
  set_tests_properties(gpu_${name} PROPERTIES LABELS gpu TIMEOUT 600
                       ENVIRONMENT "PARBENCH_EMU_WAIT_TIMEOUT=120;${pb_env}")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/../listing.cmake)
parbench_listing("${pb_bin}/bench_allreduce" --list-impls gpu_device_impls_listed pb_rows)
set(pb_device "")    # the device-side implementations, registry order
set(pb_all "")       # every implementation
set(pb_colls "")     # the collectives any of them serves, first-seen order
foreach(line IN LISTS pb_rows)
  separate_arguments(fields UNIX_COMMAND "${line}")
  list(GET fields 0 impl)
  list(GET fields 1 kind)
  list(GET fields 2 colls)
  list(APPEND pb_all ${impl})
  if(kind STREQUAL "device")
    list(APPEND pb_device ${impl})
    string(REPLACE "," ";" colls "${colls}")
    set(pb_serves_${impl} ${colls})
    foreach(c IN LISTS colls)
      list(APPEND pb_impls_${c} ${impl})
      list(FIND pb_colls ${c} seen)  # (ctest's scripts run under the old policies: no IN_LIST)
      if(seen EQUAL -1)
        list(APPEND pb_colls ${c})
      endif()
    endforeach()
  endif()
endforeach()
if(pb_device STREQUAL "")
  if(NOT pb_rows STREQUAL "")  # (an empty or failed listing has its failing test already)
    add_test(gpu_device_impls_listed sh -c "echo \"$0 --list-impls listed no device-side implementation\"; exit 1"
             "${pb_bin}/bench_allreduce")
  endif()
  return()
endif()

set(pb_types -o sum,avg -d float,bfloat16,int8)
set(pb_env "PARBENCH_EMU_GPUS=8")
set(pb_ranks 2 3 4 8)
if(pb_sanitize)
  set(pb_ranks 2 3 4)
endif()
foreach(ranks IN LISTS pb_ranks)
  foreach(coll IN LISTS pb_colls)
    list(JOIN pb_impls_${coll} "," impls)
    set(root "")
    if(coll MATCHES "^(broadcast|reduce|gather|scatter)$")
      math(EXPR last "${ranks} - 1")
      set(root -r ${last})
      if(ranks EQUAL 3 AND NOT coll STREQUAL "reduce")
        set(root -r all)
      endif()
    endif()
    set(types ${pb_types})
    if(ranks EQUAL 3 OR NOT pb_sanitize)
      set(types -o all -d all)
    endif()
    pb_dev_test(bench_${coll}_dev_threads${ranks} ${pb_bin}/bench_${coll} --device cuda --ranks ${ranks}
                --impl ${impls} ${types} ${root} --sizes 1K,33K -n 1 -w 1 -c 1 --timeout 60)
  endforeach()
endforeach()
list(JOIN pb_impls_allreduce "," impls)
pb_dev_test(dev_batch ${pb_counted} batch ${pb_bin}/bench_allreduce --device cuda --ranks 4 --impl ${impls}
            --sizes 1K,64K -n 5 -w 1 --timeout 60)
if(pb_impls_alltoall)
  list(JOIN pb_impls_alltoall "," impls)
  pb_dev_test(dev_batch_alltoall ${pb_counted} batch ${pb_bin}/bench_alltoall --device cuda --ranks 4 --impl ${impls}
              --sizes 1K,64K -n 5 -w 1 --timeout 60)
endif()
set(pb_env "")

if(pb_mpiexec)  # a process per rank: the buffers exchanged as CUDA IPC handles
  set(pb_mpi ${pb_mpiexec} --allow-run-as-root --oversubscribe)
  foreach(coll IN LISTS pb_colls)
    list(JOIN pb_impls_${coll} "," impls)
    # The sanitizer build: allreduce at 2 and 4 processes, allgather and reduce-scatter at 3 (uneven shares), the
    # rest at 4, sum and avg of three types; the other builds: every collective at 2 and 4, every op and type.
    set(nps 2 4)
    set(types -o all -d all)
    if(pb_sanitize)
      set(types ${pb_types})
      if(coll MATCHES "^(allgather|reducescatter)$")
        set(nps 3)
      elseif(NOT coll STREQUAL "allreduce")
        set(nps 4)
      endif()
    endif()
    foreach(np IN LISTS nps)
      set(root "")
      if(coll MATCHES "^(broadcast|reduce|gather|scatter)$")
        math(EXPR last "${np} - 1")
        set(root -r ${last})
      endif()
      pb_dev_test(bench_${coll}_dev_mpi${np} ${pb_mpi} -np ${np} ${pb_bin}/bench_${coll} --device cuda
                  --impl ${impls} ${types} ${root} --sizes 1K,33K -n 1 -w 1 -c 1 --timeout 60)
    endforeach()
  endforeach()
endif()

foreach(impl IN LISTS pb_device)
  # The planted race: its allreduce and the first other collective of its row.
  set(entries allreduce)
  foreach(c IN LISTS pb_serves_${impl})
    if(NOT c STREQUAL "allreduce")
      list(APPEND entries ${c})
      break()
    endif()
  endforeach()
  foreach(coll IN LISTS entries)
    set(name ${impl})
    if(NOT coll STREQUAL "allreduce")
      set(name ${impl}_${coll})
    endif()
    foreach(seed 1 2)
      add_test(gpu_${name}_skipped_wait_caught_seed${seed} ${pb_bin}/bench_${coll} --device cuda --ranks 4
               --impl ${impl} --sizes 1K,64K -n 2 -w 1 -c 2 --timeout 60)
      set_tests_properties(gpu_${name}_skipped_wait_caught_seed${seed} PROPERTIES LABELS gpu TIMEOUT 120
                           ENVIRONMENT "PARBENCH_EMU_DELAY=random:${seed};PARBENCH_TEST_SYMM_SKIP_WAIT=1"
                           PASS_REGULAR_EXPRESSION "wrong element\\(s\\) in check round")
    endforeach()
  endforeach()
  # A stalled rank named by its peer's kernel (two ranks: with more, a rank may wait for one that waits for the
  # stalled one, and name that one).
  add_test(gpu_${impl}_stalled_rank_named ${pb_bin}/bench_allreduce --device cuda --ranks 2 --impl ${impl} --sizes 1K
           -n 4 -w 1 --timeout 2)
  set_tests_properties(gpu_${impl}_stalled_rank_named PROPERTIES LABELS gpu TIMEOUT 120
                       ENVIRONMENT "PARBENCH_FAULT=rank:1,after:3,kind:stall"
                       PASS_REGULAR_EXPRESSION
                       "allreduce/${impl} of 1024 bytes .* timeout of 2 s: rank 1 did not arrive: rank 0's")
endforeach()

# Every implementation bench_allreduce accepts, in one list: those that can run here run with a clean data check,
# the rest print `not run: <reason>` (the emulated NCCL has no device API, the MPI library needs a process per rank)
# and the run exits 0. Under one stream-timing seed (the run is long for several).
if(NOT pb_has_nccl)
  return()
endif()
list(JOIN pb_all "," impls)
add_test(gpu_bench_allreduce_every_impl sh -c "\"$0\" \"$@\" 2>&1; echo exit status $?" ${pb_bin}/bench_allreduce
         --device cuda --ranks 2 --impl ${impls} --sizes 1K,33K -n 1 -w 1 --timeout 60)
set_tests_properties(gpu_bench_allreduce_every_impl PROPERTIES LABELS gpu TIMEOUT 300
                     ENVIRONMENT "PARBENCH_EMU_DELAY=random:1;PARBENCH_EMU_WAIT_TIMEOUT=120"
                     PASS_REGULAR_EXPRESSION "# nccl-lsa: not run: --impl nccl-lsa \\(our allreduce kernels on NCCL's device API\\): NCCL device API not available: emulated NCCL.*# nccl-multimem: not run: --impl nccl-multimem .*exit status 0"
                     FAIL_REGULAR_EXPRESSION "exit status [1-9]|Out of bounds values : [1-9]|FAILED")
