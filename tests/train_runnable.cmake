# Read by ctest, not by cmake (a TEST_INCLUDE_FILES script, as gtest_discover_tests' lists are): the tests of every
# scheme x schedule x --dp-scheme come from bench_train --list-runnable, so an entry added to the registries is
# tested without anyone editing a list. parbench_add_runnable_tests(DIR) at configure time registers DIR's
# runnable_tests.cmake, which calls parbench_runnable() here at test time.

# parbench_runnable(PROGRAM PREFIX): PREFIX_names, and for each name PREFIX_<name>_ranks, _layers, _family and
# _args (a list) in the caller. When PROGRAM is not built, fails or lists nothing, a test named PREFIX_list_runnable
# that fails saying so (the generated tests must not vanish silently), and no names.
include(${CMAKE_CURRENT_LIST_DIR}/listing.cmake)
function(parbench_runnable program prefix)
  set(names "")
  parbench_listing("${program}" --list-runnable ${prefix}_list_runnable rows)
  foreach(line IN LISTS rows)
    separate_arguments(fields UNIX_COMMAND "${line}")
    list(POP_FRONT fields name ranks layers family)
    list(APPEND names ${name})
    set(${prefix}_${name}_ranks ${ranks} PARENT_SCOPE)
    set(${prefix}_${name}_layers ${layers} PARENT_SCOPE)
    set(${prefix}_${name}_family ${family} PARENT_SCOPE)
    set(${prefix}_${name}_args "${fields}" PARENT_SCOPE)
  endforeach()
  set(${prefix}_names "${names}" PARENT_SCOPE)
endfunction()

# The smallest multiple of `need` that is at least `want` layers (a pipeline needs layers per virtual stage).
function(parbench_runnable_layers want need out)
  math(EXPR layers "((${want} + ${need} - 1) / ${need}) * ${need}")
  set(${out} ${layers} PARENT_SCOPE)
endfunction()
