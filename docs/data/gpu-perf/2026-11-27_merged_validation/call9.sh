#!/usr/bin/env bash
# the MPI tests again (two GPUs), after the setup check's fix for a GPU rank resumed with --restart
set -u
cd "$(dirname "$0")/.."
R=$OUT/res; mkdir -p $R
export NCCL_NVLS_ENABLE=0 PERIDOT_REQUIRE_GPU=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee $R/device.txt
M=$PWD/.gpu-mpi
for d in /work/target-final/release /work/target-guard/release; do mkdir -p $d && cp $M/peridot $d/peridot; done
source $M/mpich_bundle.sh unpack $M; set +e
timeout 200 $M/mpi_tests --test-threads 1 > $R/mpi_tests.log 2>&1; echo "mpi_tests exit $?" >> $R/mpi_tests.log
grep -E "^test |test result|exit|panicked" $R/mpi_tests.log
cd $OUT && tar czf res.tgz res && rm -rf res
