#!/bin/sh
# Runs a command with CUDA_VISIBLE_DEVICES set to the process's node-local rank (OpenMPI), as a cluster's job
# script gives each rank its own GPU: every process then sees one GPU, its device 0.
export CUDA_VISIBLE_DEVICES="${OMPI_COMM_WORLD_LOCAL_RANK:?run this under mpirun}"
exec "$@"
