#!/usr/bin/env bash
# The steps of flatten's GitHub Action (action.yml), one subcommand each:
#   cache-key  the key and path of the installed virtual environment, for actions/cache (written
#              to $GITHUB_OUTPUT as key= and path=): the runner's OS and machine, the Python
#              (version and interpreter path), the environment's path and a digest of every file
#              the install reads from the action's checkout. A second job with the same key
#              restores the environment and skips pip.
#   install    a virtual environment in $RUNNER_TEMP with flatten installed from the action's own
#              checkout ($GITHUB_ACTION_PATH) by pip, unless the cache restored one installed for
#              the same key; its bin/ goes onto $GITHUB_PATH and FLATTEN_BIN into $GITHUB_ENV.
#   run        flatten build on $INPUT_ROOTS into $INPUT_OUT (--check unless INPUT_CHECK=false);
#              the diagnostics again as JSON in $RUNNER_TEMP, from which the step summary is
#              written ($GITHUB_STEP_SUMMARY: roots, status, findings, stale files;
#              scripts/action_summary.py), and with INPUT_UPLOAD_SARIF=true as SARIF. Writes
#              exit-code (and, with INPUT_UPLOAD_SARIF=true, sarif-file) to $GITHUB_OUTPUT and
#              exits 0, so the upload still runs.
#   finish     exits with $FLATTEN_EXIT_CODE (the run step's exit-code), failing the job on errors.
#
# Inputs come as environment variables (never spliced into the script: no shell injection). List
# inputs (roots, args) are one item per line, never split on spaces; each is checked before use,
# and roots go after `--`, so a root is never read as an option. No input is echoed raw: a message
# that names one shows it through `shown` (control characters escaped, on one line), and every line
# this script prints either is one of its own workflow commands or cannot start with `::`.
# tests/project/test_action.py runs these with the environment GitHub sets.
set -euo pipefail

# Escape text for the message of a workflow command (GitHub's escaping: % \r \n), so that one
# message is one line and never ends the command early.
escape_data() {
    local text="$1"
    text="${text//'%'/%25}"
    text="${text//$'\r'/%0D}"
    text="${text//$'\n'/%0A}"
    printf '%s' "$text"
}

# An input's value as a message shows it: quoted, control characters as \xNN, at most 80 bytes.
shown() {
    local value="$1" out="" ch i
    for ((i = 0; i < ${#value} && i < 80; i++)); do
        ch="${value:i:1}"
        case "$ch" in
        [[:cntrl:]]) out+="$(printf '\\x%02x' "'$ch")" ;;
        *) out+="$ch" ;;
        esac
    done
    [ "${#value}" -le 80 ] || out+="..."
    printf "'%s'" "$out"
}

annotate() { # annotate LEVEL MESSAGE: one workflow command of ours
    printf '::%s title=flatten action::%s\n' "$1" "$(escape_data "$2")" >&2
}

die() {
    annotate error "$1"
    exit 2
}

# Read the lines of a list input into the array named $2: one item per line, blank lines and
# surrounding spaces dropped (a YAML block scalar ends with a newline), a carriage return too.
read_list() {
    local -n _into="$2"
    local line
    _into=()
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line%$'\r'}"
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        [ -z "$line" ] || _into+=("$line")
    done <<<"$1"
}

venv_dir() {
    echo "${RUNNER_TEMP:?RUNNER_TEMP is set by GitHub Actions}/flatten-action"
}

python_cmd() {
    echo "${FLATTEN_PYTHON:-python3}"
}

# The cache key (see the top of this file). The digest covers what pip reads to build flatten:
# pyproject.toml, the package's files, and the files its metadata names (README.md, LICENSE,
# MANIFEST.in); bytecode caches are left out.
cache_key() {
    local source="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is set by GitHub Actions}"
    local python
    python="$(python_cmd)"
    "$python" - "$source" "$(venv_dir)" <<'PY'
import hashlib
import os
import platform
import sys

source, venv = sys.argv[1], sys.argv[2]
digest = hashlib.sha256()
names = [n for n in ("pyproject.toml", "MANIFEST.in", "README.md", "LICENSE") if os.path.isfile(os.path.join(source, n))]
for directory, dirs, files in os.walk(os.path.join(source, "flatten")):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    names += [os.path.relpath(os.path.join(directory, f), source) for f in files if not f.endswith(".pyc")]
for name in sorted(n.replace(os.sep, "/") for n in names):
    with open(os.path.join(source, name), "rb") as f:
        data = f.read()
    digest.update(b"%d %s %d\n" % (len(name.encode()), name.encode(), len(data)) + data)
where = hashlib.sha256(f"{os.path.realpath(sys.executable)}\n{venv}".encode()).hexdigest()[:12]
python = ".".join(map(str, sys.version_info[:3]))
system = f"{platform.system()}-{platform.machine()}".lower()
print(f"flatten-action-v1-{system}-py{python}-{where}-{digest.hexdigest()[:32]}")
PY
}

write_cache_key() {
    local output="${GITHUB_OUTPUT:?GITHUB_OUTPUT is set by GitHub Actions}"
    local key
    key="$(cache_key)"
    echo "key=$key" >>"$output"
    echo "path=$(venv_dir)" >>"$output"
    echo "flatten action: cache key $key"
}

install() {
    local source="${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is set by GitHub Actions}"
    local python venv key
    python="$(python_cmd)"
    venv="$(venv_dir)"
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        die "flatten needs Python 3.11 or later; set the action's python-version input."
    key="$(cache_key)"
    # A restored environment is used only when it was installed for this very key and runs.
    if [ -f "$venv/.flatten-action-key" ] && [ "$(<"$venv/.flatten-action-key")" = "$key" ] &&
        "$venv/bin/flatten" --version >/dev/null 2>&1; then
        echo "flatten action: using the environment the cache restored (key $key)"
    else
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$source"
        # Bytecode compiled now is cached with the environment, so the second job skips it too.
        "$venv/bin/python" -m compileall -q "$venv/lib" >/dev/null 2>&1 || true
        echo "$key" >"$venv/.flatten-action-key"
    fi
    echo "$venv/bin" >>"${GITHUB_PATH:?GITHUB_PATH is set by GitHub Actions}"
    echo "FLATTEN_BIN=$venv/bin/flatten" >>"${GITHUB_ENV:?GITHUB_ENV is set by GitHub Actions}"
    "$venv/bin/flatten" --version
}

# Check a path input (a root, out, working-directory): one line, not empty.
check_path() {
    local name="$1" value="$2"
    [ -n "$value" ] || die "the $name input is empty."
    case "$value" in
    *[$'\n\r']*) die "the $name input holds a line break: $(shown "$value")." ;;
    esac
}

run() {
    local flatten="${FLATTEN_BIN:-$(venv_dir)/bin/flatten}"
    local output="${GITHUB_OUTPUT:?GITHUB_OUTPUT is set by GitHub Actions}"
    [ -x "$flatten" ] || die "flatten is not installed (the action's install step did not run)."
    case "${INPUT_MODE:-build}" in
    build) ;;
    affected)
        affected "$flatten" "$output"
        return
        ;;
    *) die "the mode input is 'build' or 'affected'." ;;
    esac
    [ -n "${INPUT_OUT:-}" ] || die "the out input is required: where the flattened tree goes."
    check_path out "$INPUT_OUT"
    local workdir="${INPUT_WORKING_DIRECTORY:-${GITHUB_WORKSPACE:?GITHUB_WORKSPACE is set by GitHub Actions}}"
    check_path working-directory "$workdir"
    [ -d "$workdir" ] || die "the working-directory input $(shown "$workdir") is not a directory."
    cd -- "$workdir"

    local -a roots extra check=()
    read_list "${INPUT_ROOTS:-.}" roots
    [ "${#roots[@]}" -gt 0 ] || roots=(.)
    local root
    for root in "${roots[@]}"; do
        [ -d "$root" ] ||
            die "the roots input names $(shown "$root"), which is not a directory under the working directory (one root per line)."
    done
    read_list "${INPUT_ARGS:-}" extra
    local arg
    for arg in "${extra[@]}"; do
        case "$arg" in
        -*) ;;
        *) die "the args input is one option per line (--name or --name=value); $(shown "$arg") is not one." ;;
        esac
        case "$arg" in
        *=*) ;;
        *[[:space:]]*) die "the args input is one option per line (--name or --name=value); $(shown "$arg") holds a space." ;;
        esac
    done
    case "${INPUT_CHECK:-true}" in
    true) check=(--check) ;;
    false) ;;
    *) die "the check input is 'true' or 'false'." ;;
    esac
    case "${INPUT_DIALECT:-terraform}" in
    terraform | opentofu) ;;
    *) die "the dialect input is 'terraform' or 'opentofu'." ;;
    esac
    case "${INPUT_UPLOAD_SARIF:-false}" in
    true | false) ;;
    *) die "the upload-sarif input is 'true' or 'false'." ;;
    esac

    # Options first, roots after `--`: a root such as `--exclude=*` stays a directory name.
    local -a args=(build "--out=$INPUT_OUT" "--dialect=${INPUT_DIALECT:-terraform}" "${extra[@]}")
    local code=0 temp="${RUNNER_TEMP:?RUNNER_TEMP is set by GitHub Actions}"
    local diff="$temp/flatten.diff"
    : >"$diff"
    # --check --diff: each stale file's diff on stdout, for the step summary (not with a --format
    # of the args input, whose report would take stdout).
    if [ "${#check[@]}" -gt 0 ] && ! printf '%s\n' "${extra[@]}" | grep -q -e '^--format' -e '^--diagnostics-json'; then
        check+=(--diff)
    fi
    # Text diagnostics and workflow annotations (GITHUB_ACTIONS=true) go to the log.
    "$flatten" "${args[@]}" "${check[@]}" -- "${roots[@]}" >"$diff" || code=$?
    echo "exit-code=$code" >>"$output"

    # The same diagnostics again, as SARIF for code scanning and as JSON for the step summary:
    # --check writes nothing (the tree the first run wrote is checked, so its replay makes these
    # runs quick).
    if [ "${INPUT_UPLOAD_SARIF:-false}" = true ]; then
        local sarif="$temp/flatten.sarif" sarif_code=0
        "$flatten" "${args[@]}" --check --format sarif -- "${roots[@]}" >"$sarif" 2>/dev/null ||
            sarif_code=$?
        if [ "$sarif_code" -le 1 ] && [ -s "$sarif" ]; then
            echo "sarif-file=$sarif" >>"$output"
        else
            annotate warning "no SARIF report was written (exit $sarif_code)."
        fi
    fi
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
        local report="$temp/flatten-report.json" python
        "$flatten" "${args[@]}" --check --format json -- "${roots[@]}" >"$report" 2>/dev/null || true
        python="$(dirname -- "$flatten")/python"
        [ -x "$python" ] || python="$(python_cmd)"
        printf '%s\n' "${roots[@]}" | "$python" "$(dirname -- "${BASH_SOURCE[0]}")/action_summary.py" \
            --json "$report" --diff "$diff" --out "$INPUT_OUT" --exit-code "$code" --check "${INPUT_CHECK:-true}" \
            >>"$GITHUB_STEP_SUMMARY" || annotate warning "the step summary could not be written."
    fi
}

# Check the args input (one option per line) into the array named $1.
read_args() {
    local -n _args="$1"
    read_list "${INPUT_ARGS:-}" _args
    local arg
    for arg in "${_args[@]}"; do
        case "$arg" in
        -*) ;;
        *) die "the args input is one option per line (--name or --name=value); $(shown "$arg") is not one." ;;
        esac
        case "$arg" in
        *=*) ;;
        *[[:space:]]*) die "the args input is one option per line (--name or --name=value); $(shown "$arg") holds a space." ;;
        esac
    done
}

# Affected mode: flatten affected --format github-matrix; the matrix (one line of JSON) goes to
# $GITHUB_OUTPUT as matrix=, any-affected= says whether it has a root, and why each root is listed
# goes to the log (flatten's stderr).
affected() {
    local flatten="$1" output="$2"
    local workdir="${INPUT_WORKING_DIRECTORY:-${GITHUB_WORKSPACE:?GITHUB_WORKSPACE is set by GitHub Actions}}"
    check_path working-directory "$workdir"
    [ -d "$workdir" ] || die "the working-directory input $(shown "$workdir") is not a directory."
    cd -- "$workdir"
    local -a roots extra against
    read_list "${INPUT_ROOTS:-}" roots
    local root
    for root in "${roots[@]}"; do
        check_path roots "$root"
    done
    read_args extra
    case "${INPUT_DIALECT:-terraform}" in
    terraform | opentofu) ;;
    *) die "the dialect input is 'terraform' or 'opentofu'." ;;
    esac
    if [ -n "${INPUT_BASE_OUT:-}" ]; then
        check_path base-out "$INPUT_BASE_OUT"
        against=("--base-out=$INPUT_BASE_OUT")
    else
        local since="${INPUT_SINCE:-}"
        check_path since "$since"
        case "$since" in
        0000000000000000000000000000000000000000)
            die "the since input is empty and this push has no previous commit (a new branch): set since (for example origin/main)." ;;
        -*) die "the since input $(shown "$since") is not a git revision." ;;
        esac
        against=("--since=$since")
    fi
    local matrix code=0
    matrix="$("$flatten" affected --format github-matrix "--dialect=${INPUT_DIALECT:-terraform}" "${against[@]}" "${extra[@]}" -- "${roots[@]}")" || code=$?
    echo "exit-code=$code" >>"$output"
    if [ "$code" -ne 0 ]; then
        return
    fi
    case "$matrix" in
    *[$'\n\r']*) die "flatten affected printed more than one line." ;;
    esac
    echo "matrix=$matrix" >>"$output"
    if [ "$matrix" = '{"include":[]}' ]; then
        echo "any-affected=false" >>"$output"
    else
        echo "any-affected=true" >>"$output"
    fi
}

finish() {
    local code="${FLATTEN_EXIT_CODE:-}"
    case "$code" in
    '' | *[!0-9]*) die "the build step gave no exit code." ;;
    esac
    if [ "$code" -ne 0 ]; then
        echo "flatten build exited $code (1: configuration errors or a stale output; 2: a usage error)." >&2
    fi
    exit "$code"
}

case "${1:-}" in
cache-key) write_cache_key ;;
install) install ;;
run) run ;;
finish) finish ;;
*) die "usage: scripts/action.sh cache-key|install|run|finish" ;;
esac
