#!/usr/bin/env bash
# Runs make targets one after another, as phases, and prints a table of
# their times at the end, including when one fails (then it stops there,
# unless KEEP_GOING is set: then every phase runs, and the exit status is
# the last failure's):
#
#   hack/phases.sh TARGET...
#
# MAKE is the make to call (make's own $(MAKE) when run from the Makefile).
# PHASES_TABLE, if set, also gets the table (a file path); PHASES_LOGS, if
# set, a directory that gets each phase's output as PHASE.log.
set -uo pipefail
make=${MAKE:-make}
names=() secs=() results=()
table() {
  local total=0 i
  printf '\n%-20s %9s  %s\n' PHASE SECONDS RESULT
  for i in "${!names[@]}"; do
    printf '%-20s %9d  %s\n' "${names[$i]}" "${secs[$i]}" "${results[$i]}"
    total=$((total + secs[i]))
  done
  printf '%-20s %9d  (%dm%02ds)\n' total "$total" $((total / 60)) $((total % 60))
}
status=0
for t in "$@"; do
  echo "== phase $t ($(date +%H:%M:%S))"
  start=$(date +%s)
  if [ -n "${PHASES_LOGS:-}" ]; then
    "$make" --no-print-directory "$t" 2>&1 | tee "$PHASES_LOGS/$t.log"
    rc=${PIPESTATUS[0]}
  else
    "$make" --no-print-directory "$t"
    rc=$?
  fi
  names+=("$t") secs+=($(($(date +%s) - start)))
  if [ "$rc" -ne 0 ]; then
    results+=("FAIL (exit $rc)")
    status=$rc
    [ -n "${KEEP_GOING:-}" ] || break
    continue
  fi
  results+=(ok)
done
table
[ -n "${PHASES_TABLE:-}" ] && table > "$PHASES_TABLE"
exit "$status"
