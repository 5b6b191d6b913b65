# gnuplot-iostream: one header, gnuplot-iostream.h (Debian/Ubuntu libgnuplot-iostream-dev; not packaged for
# RHEL/Rocky: copy the header from github.com/dstahlke/gnuplot-iostream into a folder on CMAKE_PREFIX_PATH's
# include/, or pass that folder as -DPARBENCH_GNUPLOT_IOSTREAM_INCLUDE_DIR). A find module so that
# CMAKE_DISABLE_FIND_PACKAGE_GnuplotIostream hides it like any other package. Sets GnuplotIostream_FOUND and
# PARBENCH_GNUPLOT_IOSTREAM_INCLUDE_DIR.
find_path(PARBENCH_GNUPLOT_IOSTREAM_INCLUDE_DIR gnuplot-iostream.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(GnuplotIostream REQUIRED_VARS PARBENCH_GNUPLOT_IOSTREAM_INCLUDE_DIR)
