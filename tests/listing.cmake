# Read by ctest, not by cmake (included by the TEST_INCLUDE_FILES scripts that make tests from a program's
# listing: train_runnable.cmake, gpu_emu/device_impls.cmake).
#
# parbench_listing(PROGRAM OPTION TEST OUT): OUT is the list of the lines `PROGRAM OPTION` prints that are neither
# blank nor comments (separate_arguments splits one into its fields). When PROGRAM is not built, fails or lists
# nothing, OUT is empty and a test named TEST fails saying so: the tests made from a listing must not vanish
# silently.
function(parbench_listing program option test out)
  set(rows "")
  execute_process(COMMAND "${program}" ${option} OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    string(REPLACE "\n" ";" lines "${text}")
    foreach(line IN LISTS lines)
      if(NOT line STREQUAL "" AND NOT line MATCHES "^#")
        list(APPEND rows "${line}")
      endif()
    endforeach()
  endif()
  if(NOT rc EQUAL 0)
    string(REPLACE "\n" " " err "${err}")
    add_test(${test} sh -c "echo \"$0 $1 (exit $2): $3\"; exit 1" "${program}" "${option}" "${rc}" "${err}")
  elseif(rows STREQUAL "")
    add_test(${test} sh -c "echo \"$0 $1 printed nothing to make tests from\"; exit 1" "${program}" "${option}")
  endif()
  set(${out} "${rows}" PARENT_SCOPE)
endfunction()
