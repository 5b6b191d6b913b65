# The collectives' names, read from the rows of the collective table (collectives/table/collective_table.cpp, the one
# place they are spelled): one bench_<name> program each, and the test lists that run every collective.
set(pb_table ${CMAKE_CURRENT_LIST_DIR}/collective_table.cpp)
set(pb_row "^ *{Collective::[a-z0-9_]+, *\"([a-z0-9_-]+)\"")
file(STRINGS ${pb_table} pb_rows REGEX "${pb_row}")
set(PARBENCH_COLLECTIVES)
foreach(row IN LISTS pb_rows)
  string(REGEX REPLACE "${pb_row}.*" "\\1" name "${row}")
  list(APPEND PARBENCH_COLLECTIVES ${name})
endforeach()
if(NOT PARBENCH_COLLECTIVES)
  message(FATAL_ERROR "no collective rows ({Collective::<id>, \"<name>\", ...) found in ${pb_table}")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${pb_table})
