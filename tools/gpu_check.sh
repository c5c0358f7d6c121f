#!/usr/bin/env bash
# Run every package's CUDA tests (packages/<slug>/tests/test_gpu.py, marker `gpu`) on a GPU machine.
#
# Usage, from the repository root:   OUT=/some/dir bash tools/gpu_check.sh [slug ...]
#
# No network is needed: packages missing on the machine travel as wheels in .whl/ (WHEELS overrides the folder) and
# are installed with --no-deps into $SITE (default /tmp/site). The workspace sources are put on PYTHONPATH, so nothing
# is built. Each package runs in its own pytest process under a time limit (PER_PACKAGE_S, default 120 s); one
# package that fails to import does not stop the others; packages not started by TOTAL_S (default 270 s) are
# reported as not run. Everything is tee'd to $OUT/gpu_check.log; the last lines are a one-line summary per package.
# Exit status: 0 when every package passed (or skipped), 1 otherwise.
set -u
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/gpu_check}
SITE=${SITE:-/tmp/site}
WHEELS=${WHEELS:-.whl}
PER_PACKAGE_S=${PER_PACKAGE_S:-120}
TOTAL_S=${TOTAL_S:-270}
DEFAULT_PACKAGES="gora gradspo vgsearch sama factost treegen st2360d routing commono"
PACKAGES=${*:-$DEFAULT_PACKAGES}

mkdir -p "$OUT"
LOG=$OUT/gpu_check.log
: >"$LOG"
say() { echo "$@" | tee -a "$LOG"; }

if compgen -G "$WHEELS/*.whl" >/dev/null; then
    say "== installing $(ls "$WHEELS"/*.whl | wc -l) wheels from $WHEELS into $SITE (--no-deps)"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$WHEELS"/*.whl 2>&1 | tee -a "$LOG"
else
    say "== no wheels in $WHEELS: using the packages already installed"
fi

src_paths=$(printf '%s:' "$PWD/shared/src" "$PWD"/packages/*/src)
export PYTHONPATH="${src_paths}${SITE}${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 MPLBACKEND=Agg
export NIPS25_CACHE_DIR=${NIPS25_CACHE_DIR:-/tmp/nips25-gpu-cache}

{
    echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
    nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
    "$PY" - <<'EOF' 2>&1
import sys
import torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"cuda available: {torch.cuda.is_available()}"
      + (f", device: {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""))
EOF
} | tee -a "$LOG"

declare -A result
start=$SECONDS
failed=0
for slug in $PACKAGES; do
    file=packages/$slug/tests/test_gpu.py
    if [ ! -f "$file" ]; then
        result[$slug]="MISSING  no $file"
        failed=1
        continue
    fi
    if (( SECONDS - start > TOTAL_S )); then
        result[$slug]="NOT RUN  over the ${TOTAL_S} s budget"
        failed=1
        continue
    fi
    say ""
    say "================================ $slug ================================"
    t0=$SECONDS
    pkg_log=$OUT/$slug.log
    timeout --kill-after=10 "$PER_PACKAGE_S" "$PY" -m pytest -p no:cacheprovider --import-mode=importlib -m gpu -v -rs \
        "$file" >"$pkg_log" 2>&1
    rc=$?
    cat "$pkg_log" >>"$LOG"
    cat "$pkg_log"
    line=$(grep -E '^=+ .*(passed|failed|skipped|error|no tests ran|deselected).* =+$' "$pkg_log" | tail -n 1 |
        sed -E 's/^=+ //; s/ =+$//')
    case $rc in
        0) status=OK ;;
        5) status=NO-TESTS ;;
        124 | 137) status=TIMEOUT; line="killed after ${PER_PACKAGE_S} s" ;;
        *) status=FAIL ;;
    esac
    [ "$status" = OK ] || failed=1
    result[$slug]="$(printf '%-8s %s (rc %s, %d s)' "$status" "${line:-see $slug.log}" "$rc" $((SECONDS - t0)))"
    rm -f "$pkg_log"
done

say ""
say "================================ summary ($((SECONDS - start)) s) ================================"
for slug in $PACKAGES; do
    say "$(printf '%-10s %s' "$slug" "${result[$slug]}")"
done
exit $failed
