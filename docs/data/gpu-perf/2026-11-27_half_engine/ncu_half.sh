#!/usr/bin/env bash
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1 || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
M=gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__grid_size,launch__block_size,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
{
$NCU --kernel-name regex:"pmb_force_lattice|pmb_half_gather|half_tile|half_gather" --launch-count 6 --metrics $M ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 4M --steps 3 --out /tmp/b3 2>&1 | grep -vE "^==PROF==|^\s*$" | tail -80
TILE=32,8,4 $NCU --kernel-name regex:"half_tile|half_gather" --launch-count 2 --metrics $M ./half_stencil 160 1 2>&1 | tail -40
} 2>&1 | tee $OUT/ncu.log
