#!/usr/bin/env bash
# Runs its arguments on 2 CPUs of its own: PIN_BASE + 2 x the local rank, and the next one (taskset).
r=${OMPI_COMM_WORLD_LOCAL_RANK:-0}
a=$((PIN_BASE + 2 * r))
exec taskset -c "$a,$((a + 1))" "$@"
