#!/usr/bin/env bash
# A checkpoint of gpu-loop ranks over 64 MiB (the gather to rank 0 one rank's piece at a
# time) from the build before that change (peridot-old, 1fc3842) and after: the two files
# compared byte for byte, then the run resumed from it across 2 ranks against the straight
# run (summary and probes).
set -u
cd "$(dirname "$0")/.."  # (run as .gpu-mpi/call_gather.sh: the repository root)
M=$PWD/.gpu-mpi; O=$OUT
for f in $M/peridot.xz $M/peridot-old.xz; do [ -f $f ] && xz -d -f $f; done
chmod +x $M/peridot $M/peridot-old
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
source $M/mpich_bundle.sh unpack $M >/dev/null
run() { # binary out steps [more]
  local b=$1 d=$2 n=$3; shift 3
  RAYON_NUM_THREADS=8 timeout 150 mpirun -n 2 $M/$b run models/pmb_block_3d.toml --backend gpu-loop --quiet --out $d --set discretization.dx=4e-4 --set solver.steps=$n --set output.checkpoint_every=10 --set output.probe_every=5 --set output.vtk=false --set output.image=false "$@"
}
rm -rf /tmp/g_old /tmp/g_new /tmp/g_straight
run peridot-old /tmp/g_old 10 > $O/old.log 2>&1; echo "old exit $?"
run peridot /tmp/g_new 10 > $O/new.log 2>&1; echo "new exit $?"
ls -l /tmp/g_old/checkpoints /tmp/g_new/checkpoints | tee $O/files.txt
cmp /tmp/g_old/checkpoints/step_00000010.ckpt /tmp/g_new/checkpoints/step_00000010.ckpt && echo "checkpoints identical byte for byte" | tee -a $O/files.txt
run peridot /tmp/g_new 20 --restart /tmp/g_new > $O/resumed.log 2>&1; echo "resumed exit $?"
run peridot /tmp/g_straight 20 > $O/straight.log 2>&1; echo "straight exit $?"
cmp /tmp/g_new/probes.csv /tmp/g_straight/probes.csv && echo "probes.csv identical byte for byte" | tee -a $O/files.txt
for d in /tmp/g_new /tmp/g_straight; do python3 -c "
import json; s=json.load(open('$d/summary.json'))
print('$d', s['nodes'], s['steps'], s.get('restarted_from_step'), s['broken_bonds'], s['max_damage'], s['final_time'], [(r['rank'], r['peak_rss_bytes']) for r in s['ranks']])"; done | tee -a $O/files.txt
