#!/usr/bin/env bash
# validation of the merged tree on two GPUs: GPU tests, agreement, kernels, the MPI tests
# (one GPU per rank), then gpu-matrix across ranks (half storage) on the 2 M-node 3D block
set -u
cd "$(dirname "$0")/.."
R=$OUT/res; mkdir -p $R
export NCCL_NVLS_ENABLE=0 PERIDOT_REQUIRE_GPU=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee $R/device.txt
M=$PWD/.gpu-mpi G=.gpu
for d in /work/target-final/release /work/target-guard/release; do mkdir -p $d && cp $M/peridot $d/peridot; done
timeout 300 $G/gpu_tests --test-threads 4 > $R/gpu_tests.log 2>&1; echo "gpu_tests exit $?" | tee -a $R/gpu_tests.log
grep -E "test result|FAILED|panicked" $R/gpu_tests.log | head -20
timeout 150 $G/agreement_tests --test-threads 4 > $R/agreement.log 2>&1; echo "agreement exit $?" | tee -a $R/agreement.log
grep -E "test result|FAILED|panicked" $R/agreement.log | head
timeout 90 $G/kernels_compile > $R/kernels_compile.log 2>&1; echo "kernels_compile exit $?" | tee -a $R/kernels_compile.log
grep -E "test result|FAILED|panicked" $R/kernels_compile.log
source $M/mpich_bundle.sh unpack $M; set +e
timeout 200 $M/mpi_tests --test-threads 1 > $R/mpi_tests.log 2>&1; echo "mpi_tests exit $?" >> $R/mpi_tests.log
grep -E "^test |test result|exit|panicked" $R/mpi_tests.log
[ "${SCALING:-1}" = 1 ] && bash $M/scaling10.sh
cd $OUT && tar czf res.tgz res && rm -rf res
