#!/usr/bin/env bash
# MPICH carried to a machine that has none (the GPU machines: no MPI, no package registry),
# as one compressed archive of this machine's Debian MPICH: the library a `--features mpi`
# peridot links (libmpich.so.12) with the libraries it and the launcher need, the Hydra
# launcher (`mpiexec.hydra`, `hydra_pmi_proxy`, `mpirun` linked to it) and UCX's
# shared-memory transport modules. The C library and the loader stay the target's own.
#
#   scripts/mpich_bundle.sh pack DIR       (here) writes DIR/mpich.tar.xz
#   source DIR/mpich_bundle.sh unpack DIR  (there) unpacks into DIR/mpich and puts its bin/
#                                          on PATH and lib/ on LD_LIBRARY_PATH
# One host only: `UCX_TLS=self,sm` keeps UCX off the network (set by unpack).
# (strict options only when run, not when sourced into the caller's shell)
[[ "${BASH_SOURCE[0]}" == "$0" ]] && set -euo pipefail

pack() {
    local dir=$1 stage
    stage=$(mktemp -d)
    mkdir -p "$stage/mpich/bin" "$stage/mpich/lib/ucx"
    local libdir=/usr/lib/x86_64-linux-gnu
    cp -L /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy "$stage/mpich/bin/"
    ln -s mpiexec.hydra "$stage/mpich/bin/mpirun"
    ln -s mpiexec.hydra "$stage/mpich/bin/mpiexec"
    # every library of libmpich, the launcher and UCX's modules, less the C library's own
    local objs=("$libdir/libmpich.so.12" /usr/bin/mpiexec.hydra /usr/bin/hydra_pmi_proxy)
    for m in "$libdir"/ucx/libuct_cma.so.0 "$libdir"/ucx/libuct_*.so.0; do
        [ -e "$m" ] && cp -L "$m" "$stage/mpich/lib/ucx/" && objs+=("$m")
    done
    cp -L "$libdir/libmpich.so.12" "$stage/mpich/lib/"
    ldd "${objs[@]}" 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
        grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux[^/]*)\.so' |
        while read -r lib; do cp -L "$lib" "$stage/mpich/lib/"; done
    mkdir -p "$dir"
    tar -C "$stage" -cJf "$dir/mpich.tar.xz" mpich
    cp "$0" "$dir/mpich_bundle.sh"
    rm -rf "$stage"
    du -sh "$dir/mpich.tar.xz"
}

unpack() {
    local dir=$1
    tar -C "$dir" -xJf "$dir/mpich.tar.xz"
    export PATH="$dir/mpich/bin:$PATH"
    export LD_LIBRARY_PATH="$dir/mpich/lib:${LD_LIBRARY_PATH:-}"
    export UCX_MODULE_DIR="$dir/mpich/lib/ucx"
    export UCX_TLS="${UCX_TLS:-self,sm}"
    export HYDRA_LAUNCHER=fork
}

case "${1:-}" in
    pack) pack "${2:?DIR}" ;;
    unpack) unpack "${2:?DIR}" ;;
    *) echo "usage: $0 pack DIR | source $0 unpack DIR" >&2; exit 2 ;;
esac
