#!/usr/bin/env bash
# The public API of the library products against the baseline commit in .ci/api-baseline:
# a change that removes or changes a public declaration fails here (added ones are fine).
#
# The baseline is the 1.0.0 commit and the allow-list is empty: a break means a new major version,
# whose first commit becomes the baseline (CONTRIBUTING.md, "The public API and versions").
set -euo pipefail
cd "$(dirname "$0")/.."
baseline="$(tr -d '[:space:]' < .ci/api-baseline)"
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    # A shallow clone lacks the baseline: fetch the history it needs from where it came from.
    git fetch --quiet --unshallow 2>/dev/null || git fetch --quiet origin "$baseline" 2>/dev/null || true
fi
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        # Where the history cannot be had, the check cannot run: say so loudly, do not fail the run.
        echo "warning: NOT CHECKED: this clone is shallow and the API baseline $baseline could not be fetched;" >&2
        echo "         clone with its history (no --depth) to check the public API" >&2
        exit 0
    fi
    echo "error: the API baseline $baseline (.ci/api-baseline) is not in this repository's history;" >&2
    echo "       it must name a commit of main (see the comment at the top of .ci/check_api.sh)" >&2
    exit 1
fi
swift package diagnose-api-breaking-changes "$baseline" --products Avenues AvenuesSQLite \
    --breakage-allowlist-path .ci/api-breakage-allowlist.txt
