#!/usr/bin/env bash
# The steps of flatten's GitHub Action (action.yml), one subcommand each:
#   install  a virtual environment in $RUNNER_TEMP with flatten installed from the action's own
#            checkout ($GITHUB_ACTION_PATH) by pip; its bin/ goes onto $GITHUB_PATH and
#            FLATTEN_BIN into $GITHUB_ENV, for this action's later steps and the job's.
#   run      flatten build on $INPUT_ROOTS into $INPUT_OUT (--check unless INPUT_CHECK=false);
#            with INPUT_UPLOAD_SARIF=true the diagnostics also as SARIF in $RUNNER_TEMP. Writes
#            exit-code and sarif-file to $GITHUB_OUTPUT and exits 0, so the upload still runs.
#   finish   exits with $FLATTEN_EXIT_CODE (the run step's exit-code), failing the job on errors.
# Inputs come as environment variables (never spliced into the script: no shell injection).
# tests/project/test_action.py runs these with the environment GitHub sets.
set -euo pipefail

die() {
    echo "::error title=flatten action::$1" >&2
    exit 2
}

venv_dir() {
    echo "${RUNNER_TEMP:?RUNNER_TEMP is set by GitHub Actions}/flatten-action"
}

install() {
    local source="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is set by GitHub Actions}"
    local python="${FLATTEN_PYTHON:-python3}"
    local venv
    venv="$(venv_dir)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        die "flatten needs Python 3.11 or later; set the action's python-version input."
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$source"
    echo "$venv/bin" >>"${GITHUB_PATH:?GITHUB_PATH is set by GitHub Actions}"
    echo "FLATTEN_BIN=$venv/bin/flatten" >>"${GITHUB_ENV:?GITHUB_ENV is set by GitHub Actions}"
    "$venv/bin/flatten" --version
}

run() {
    local flatten="${FLATTEN_BIN:-$(venv_dir)/bin/flatten}"
    local output="${GITHUB_OUTPUT:?GITHUB_OUTPUT is set by GitHub Actions}"
    [ -x "$flatten" ] || die "flatten is not installed (the action's install step did not run)."
    [ -n "${INPUT_OUT:-}" ] || die "the out input is required: where the flattened tree goes."
    cd "${INPUT_WORKING_DIRECTORY:-${GITHUB_WORKSPACE:?GITHUB_WORKSPACE is set by GitHub Actions}}"

    local -a roots extra args
    read -r -d '' -a roots <<<"${INPUT_ROOTS:-.}" || true
    read -r -d '' -a extra <<<"${INPUT_ARGS:-}" || true
    [ "${#roots[@]}" -gt 0 ] || roots=(.)
    args=(build "${roots[@]}" --out "$INPUT_OUT" --dialect "${INPUT_DIALECT:-terraform}" "${extra[@]}")
    local -a check=()
    case "${INPUT_CHECK:-true}" in
    true) check=(--check) ;;
    false) ;;
    *) die "the check input is 'true' or 'false', not '${INPUT_CHECK}'." ;;
    esac

    local code=0
    # Text diagnostics and workflow annotations (GITHUB_ACTIONS=true) go to the log.
    "$flatten" "${args[@]}" "${check[@]}" || code=$?
    echo "exit-code=$code" >>"$output"

    if [ "${INPUT_UPLOAD_SARIF:-false}" = true ]; then
        local sarif="${RUNNER_TEMP:?RUNNER_TEMP is set by GitHub Actions}/flatten.sarif"
        # The same diagnostics again, as SARIF: --check writes nothing (the tree the first run
        # wrote is checked, so its replay makes this run quick).
        local sarif_code=0
        "$flatten" "${args[@]}" --check --format sarif >"$sarif" 2>/dev/null ||
            sarif_code=$?
        if [ "$sarif_code" -le 1 ] && [ -s "$sarif" ]; then
            echo "sarif-file=$sarif" >>"$output"
        else
            echo "::warning title=flatten action::no SARIF report was written (exit $sarif_code)." >&2
        fi
    fi
}

finish() {
    local code="${FLATTEN_EXIT_CODE:-}"
    [ -n "$code" ] || die "the build step gave no exit code."
    if [ "$code" -ne 0 ]; then
        echo "flatten build exited $code (1: configuration errors or a stale output; 2: a usage error)." >&2
    fi
    exit "$code"
}

case "${1:-}" in
install) install ;;
run) run ;;
finish) finish ;;
*) die "usage: scripts/action.sh install|run|finish" ;;
esac
