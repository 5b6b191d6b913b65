# Read by ctest (parbench_runnable_tests): bench_train --trace on cpu rank threads for every combination that
# bench_train --list-runnable prints; check_trace_tracks.py checks that every range sits on a named track of its
# own rank (a communication thread that names no rank lands on an anonymous track of rank 0).
parbench_runnable("${pb_bench_train}" trace)
foreach(name IN LISTS trace_names)
  parbench_runnable_layers(2 ${trace_${name}_layers} layers)
  add_test(train_trace_tracks_${name} python3 "${CMAKE_CURRENT_LIST_DIR}/check_trace_tracks.py" "${pb_bench_train}"
           --device cpu --ranks ${trace_${name}_ranks} --model gpt --layers ${layers} --hidden 16 --heads 2 --seq 6
           --vocab 24 --global-batch 8 --steps 1 --warmup 0 --quiet ${trace_${name}_args})
  set_tests_properties(train_trace_tracks_${name} PROPERTIES TIMEOUT 60 LABELS unit)
endforeach()
