#!/usr/bin/env bash
# The setup of a 2-rank gpu-loop run at 8 M nodes on one H100 (both ranks on it), before
# (every rank searches every bond three times: peridot-old, commit 1e2811f) and after (each
# rank its share, setup/shared.rs), alternated twice; RAYON_NUM_THREADS=8 a rank (16 cores).
set -u
cd "$(dirname "$0")/.."  # (run as .gpu-mpi/call.sh: the repository root)
M=$PWD/.gpu-mpi; O=$OUT
for f in $M/peridot.xz $M/peridot-old.xz; do xz -d -f $f; done; chmod +x $M/peridot $M/peridot-old
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
source $M/mpich_bundle.sh unpack $M >/dev/null
for round in 1 2; do for v in peridot-old peridot; do
  d=/tmp/s_$v; rm -rf $d
  RAYON_NUM_THREADS=8 timeout 200 mpirun -n 2 /usr/bin/time -f "maxrss %M kB" $M/$v run models/pmb_block_3d.toml --backend gpu-loop --quiet --out $d --set discretization.dx=2.5e-4 --set solver.steps=100 --set output.vtk=false --set 'output.probes=[]' --set output.image=false > $O/run_${v}_$round.log 2>&1
  python3 -c "
import json; s=json.load(open('$d/summary.json')); st=s['setup']
print('$v', s['nodes'], 'to_first_step %.2f' % st['to_first_step'], {k: round(x,2) for k,x in st.items() if isinstance(x,(int,float))}, 'dt', s['dt'])" | tee -a $O/setup.txt
  grep maxrss $O/run_${v}_$round.log | tr '\n' ' ' | tee -a $O/setup.txt; echo | tee -a $O/setup.txt
done; done
