#!/bin/sh
# Waits for an Indexed Job of loadtest pods to finish, saves the JSON each pod printed, and merges it:
#
#   collect.sh JOB N [merge options]        (for example: collect.sh loadtest 4 --json merged.json)
#
# Writes JOB-<index>.json per pod and prints the merged report. Exits non-zero, with the logs of the pods
# that failed, if the Job failed (backoffLimit 0: one failed pod fails the Job, and there is no use in
# waiting on). Environment: KUBECTL (default kubectl; e.g. "kubectl -n load"), TIMEOUT (seconds to wait for
# the Job, default 900), POLL (seconds between looks, default 5).
set -eu
if [ $# -lt 2 ]; then
    echo "usage: collect.sh JOB N [loadtest merge options]" >&2
    exit 2
fi
job=$1; n=$2; shift 2
kubectl=${KUBECTL:-kubectl}
timeout=${TIMEOUT:-900}
poll=${POLL:-5}

# kubectl wait takes one condition, and waiting for "complete" alone sits out the whole timeout when the Job
# has failed: look at its conditions until one of the two is true.
waited=0
while :; do
    # shellcheck disable=SC2086
    conditions=$($kubectl get job "$job" -o 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
    case " $conditions " in
        *" Complete "*) outcome=complete; break ;;
        *" Failed "*) outcome=failed; break ;;
    esac
    if [ "$waited" -ge "$timeout" ]; then
        echo "collect.sh: job/$job has not finished after $timeout s (conditions: ${conditions:-none})" >&2
        exit 1
    fi
    sleep "$poll"
    waited=$((waited + poll))
done

# The pods and their indexes. The index is read from the annotation every Indexed Job has set since
# Kubernetes 1.21 (the label of the same name came only in 1.28); job-name is a label in every version.
# shellcheck disable=SC2086
pods=$($kubectl get pods -l "job-name=$job" \
    -o 'jsonpath={range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{" "}{.metadata.name}{" "}{.status.phase}{"\n"}{end}')

# The JSON in a pod's log: kubectl logs returns standard output and standard error together, line by line.
# The Job runs loadtest with --json=- --quiet, which prints nothing else unless something goes wrong; and
# loadtest prints its JSON pretty, one value or key a line, indented (an empty object: an empty line),
# between a "{" line and a "}" line. A
# line of standard error that lands before, inside or after it ("loadtest: ...", "  warning: ...", a report)
# is not of that shape, and is left out.
extract_json() {
    awk '
        !inside && $0 == "{" { inside = 1; print; next }
        inside && $0 == "}" { print; found = 1; exit }
        inside && $0 == "" { print; next }
        inside && /^[ \t]+("|[]{}]|\[,?$|-?[0-9][0-9.eE+-]*,?$|(true|false|null),?$)/ { print }
        END { if (!found) exit 1 }
    '
}

files=""
problems=0
i=0
while [ "$i" -lt "$n" ]; do
    line=$(printf '%s\n' "$pods" | awk -v i="$i" '$1 == i { print; exit }')
    if [ -z "$line" ]; then
        echo "collect.sh: no pod of job/$job has completion index $i" >&2
        problems=$((problems + 1))
        i=$((i + 1))
        continue
    fi
    pod=$(printf '%s\n' "$line" | awk '{ print $2 }')
    phase=$(printf '%s\n' "$line" | awk '{ print $3 }')
    # shellcheck disable=SC2086
    log=$($kubectl logs "$pod" --tail=-1) || log=""
    if [ "$phase" != "Succeeded" ]; then
        echo "collect.sh: pod $pod (index $i) is $phase; its log:" >&2
        printf '%s\n' "$log" | tail -n 20 | sed 's/^/    /' >&2
        problems=$((problems + 1))
    elif printf '%s\n' "$log" | extract_json > "$job-$i.json"; then
        files="$files $job-$i.json"
    else
        echo "collect.sh: pod $pod (index $i) printed no loadtest JSON (is --json=- among its args?); its log:" >&2
        printf '%s\n' "$log" | tail -n 20 | sed 's/^/    /' >&2
        problems=$((problems + 1))
    fi
    i=$((i + 1))
done

if [ "$problems" -gt 0 ]; then
    echo "collect.sh: job/$job $outcome; $problems of $n pods gave no result: nothing merged (the sum would not be the planned load)" >&2
    exit 1
fi
# shellcheck disable=SC2086
loadtest merge $files "$@"
