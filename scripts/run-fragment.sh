#!/usr/bin/env bash
# Runs one scripts/setup.d fragment (sourced, in this shell of its own) and names the command it stopped on: under
# set -e and pipefail a failure inside $(...) or a pipeline otherwise ends the set-up without a word (etcd's
# --version piped to head did once, in CI).
set -eEuo pipefail
setup_fragment=$1
setup_stopped() {
  # -E hands the trap to the subshells of $(...) too: only the fragment's own shell speaks.
  [ "$BASH_SUBSHELL" -eq 0 ] || return 0
  echo "setup: $setup_fragment stopped (exit $1) at line $2: $3" >&2
}
trap 'setup_stopped $? $LINENO "$BASH_COMMAND"' ERR
# shellcheck source=/dev/null
. "$setup_fragment"
