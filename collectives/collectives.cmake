# The collectives, by their table names (collectives/collective_table.cpp, whose rows test_coll_table checks against
# this list): one bench_<name> program each, and the test lists that run every collective.
set(PARBENCH_COLLECTIVES broadcast reduce allreduce gather allgather scatter reducescatter alltoall sendrecv)
