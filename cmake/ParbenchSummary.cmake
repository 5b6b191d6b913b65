# The configure summary's lines after the first (cmake/ParbenchOptions.cmake prints that one): which optional parts
# this build left out and why, and which libraries it fetched. Every line starts "-- parbench:", which
# scripts/build.sh greps.

# parbench_leave_out(PART WHY...): PART is left out of this build; WHY (its arguments joined) says what was missing
# and how to get it. A ';' in WHY would split the list the property holds: it is kept as a token until printed.
function(parbench_leave_out part)
  set(why "")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE 1 ${last})
    string(APPEND why "${ARGV${i}}")
  endforeach()
  string(REPLACE ";" "<pb-semicolon>" why "${why}")
  set_property(GLOBAL APPEND PROPERTY PARBENCH_LEFT_OUT "${part} (${why})")
endfunction()

# parbench_note_fetched(WHAT): a library that came from FetchContent rather than find_package.
function(parbench_note_fetched what)
  set_property(GLOBAL APPEND PROPERTY PARBENCH_FETCHED "${what}")
endfunction()

function(parbench_print_summary)
  get_property(fetched GLOBAL PROPERTY PARBENCH_FETCHED)
  foreach(f IN LISTS fetched)
    message(STATUS "parbench: fetched: ${f}")
  endforeach()
  get_property(left_out GLOBAL PROPERTY PARBENCH_LEFT_OUT)
  if(NOT left_out)
    message(STATUS "parbench: left out: nothing")
  endif()
  foreach(part IN LISTS left_out)
    string(REPLACE "<pb-semicolon>" ";" part "${part}")
    message(STATUS "parbench: left out: ${part}")
  endforeach()
endfunction()
