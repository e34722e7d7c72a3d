#!/bin/sh
# Collects the JSON each pod of an Indexed Job printed, and merges it: collect.sh JOB N [merge options]
# Writes JOB-<index>.json per pod and prints the merged report (add --json merged.json to keep it).
set -eu
job=$1; n=$2; shift 2
files=""
i=0
while [ "$i" -lt "$n" ]; do
    kubectl logs -l "job-name=$job,batch.kubernetes.io/job-completion-index=$i" --tail=-1 > "$job-$i.json"
    files="$files $job-$i.json"
    i=$((i + 1))
done
# shellcheck disable=SC2086
loadtest merge $files "$@"
