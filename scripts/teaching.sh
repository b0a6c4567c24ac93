#!/usr/bin/env bash
# Writes examples/teaching/README.md from walkthrough.md.in: each line
# "@collsim ARGS@" becomes the command and what collsim prints for it.
# --check compares instead of writing, and fails when they differ (ctest
# launch.teaching), so the walkthrough follows the code.
#   scripts/teaching.sh [BUILD] [--check]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
check=${2:-}
collsim="$build/tools/collsim"
[ -x "$collsim" ] || { echo "teaching: $collsim is not built (make build)" >&2; exit 1; }
out=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$out" "$scratch"' EXIT
cd "$root"
while IFS= read -r line; do
  if [[ $line =~ ^@collsim\ (.*)@$ ]]; then
    args=${BASH_REMATCH[1]}
    echo '```'
    echo "\$ build/tools/collsim $args"
    # Run in a scratch folder (a sweep's plots land there), with the cluster files found from it.
    # shellcheck disable=SC2086  # the arguments split as written in the template
    (cd "$scratch" && "$collsim" ${args//examples\//$root/examples/}) | grep -v '^plot: '
    echo '```'
  else
    printf '%s\n' "$line"
  fi
done < examples/teaching/walkthrough.md.in > "$out"
if [ "$check" = --check ]; then
  diff -u examples/teaching/README.md "$out" ||
    { echo "teaching: examples/teaching/README.md is out of date: run scripts/teaching.sh" >&2; exit 1; }
  echo "teaching: examples/teaching/README.md matches collsim"
else
  cp "$out" examples/teaching/README.md
  echo "teaching: wrote examples/teaching/README.md"
fi
