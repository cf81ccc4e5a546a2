# Sourced by setup.sh and setup_engine.sh: refuse to start an install that cannot fit.
# A full disk part-way through pip leaves a half-made venv and a long traceback
# ("OSError: [Errno 28] No space left on device"); one line up front is cheaper.
# need_disk GIB DIR WHAT: exit 1 unless DIR's filesystem has GIB GiB free.
need_disk() {
  local need_gib=$1 dir=$2 what=$3 free_kib
  free_kib=$(df -Pk "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
  [ -n "$free_kib" ] || return 0  # df could not tell: let pip try
  if [ "$free_kib" -lt $((need_gib * 1024 * 1024)) ]; then
    echo "error: $what needs about $need_gib GiB free on the disk of $dir; $((free_kib / 1024 / 1024)) GiB free." >&2
    echo "       Free some space (pip cache: python -m pip cache purge) and run this again; nothing was installed." >&2
    exit 1
  fi
}

# roomy_tmpdir: pip unpacks and buffers downloads in $TMPDIR; where that is a small tmpfs,
# use .venv-tmp/ on the project's disk instead (removed again by the caller's trap).
roomy_tmpdir() {
  local free_kib
  free_kib=$(df -Pk "${TMPDIR:-/tmp}" 2>/dev/null | awk 'NR == 2 { print $4 }')
  if [ -n "$free_kib" ] && [ "$free_kib" -lt $((2 * 1024 * 1024)) ]; then
    mkdir -p .venv-tmp
    echo "   ${TMPDIR:-/tmp} has $((free_kib / 1024)) MiB free: pip's temporary files go to .venv-tmp/"
    export TMPDIR="$PWD/.venv-tmp"
    trap 'rm -rf "$PWD/.venv-tmp"' EXIT
  fi
}
