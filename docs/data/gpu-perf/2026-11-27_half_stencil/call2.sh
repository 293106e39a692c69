#!/usr/bin/env bash
cd "$(dirname "$0")"
{
for t in 32,4,4 32,4,8 32,8,4 32,4,6 32,6,4; do TILE=$t timeout 60 ./half_stencil 160 30; done
TILE=32,4,8 timeout 60 ./half_stencil 192 30
} 2>&1 | tee $OUT/half_stencil_tiles.log
