# Shared by scripts/demo and scripts/test: make (once) and use a virtual environment.
#
# The caller sets FLATTEN_WANTS before sourcing this file:
#   runtime  flatten and its runtime dependencies, installed as a user installs it (a wheel built
#            from this checkout, not an editable install): scripts/demo, in .venv-demo (about
#            25 MB); reinstalled when flatten/ or pyproject.toml changed since the last install.
#   dev      flatten editable, with its test extras and the lint, type-check and documentation
#            tools (pyproject.toml's [dev]): scripts/test and .ci/run, in .venv.
# FLATTEN_VENV overrides where the environment lives.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
case "${FLATTEN_WANTS:-dev}" in
    runtime) VENV="${FLATTEN_VENV:-$REPO/.venv-demo}" ;;
    dev) VENV="${FLATTEN_VENV:-$REPO/.venv}" ;;
    *) echo "scripts: FLATTEN_WANTS must be runtime or dev, not ${FLATTEN_WANTS}" >&2; exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
    echo "scripts: creating virtual environment in $VENV" >&2
    "$PYTHON" -m venv "$VENV"
fi
# The stamp names what was installed; a different want, or pyproject.toml (and, for the
# non-editable runtime install, any file of the package) newer than it, installs again.
STAMP="$VENV/.flatten-installed-${FLATTEN_WANTS:-dev}"
_flatten_stale() {
    [ ! -f "$STAMP" ] || [ "$REPO/pyproject.toml" -nt "$STAMP" ] && return 0
    [ "${FLATTEN_WANTS:-dev}" = runtime ] && [ -n "$(find "$REPO/flatten" -newer "$STAMP" -print -quit)" ]
}
if _flatten_stale; then
    pip=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
    if [ "${FLATTEN_WANTS:-dev}" = runtime ]; then
        echo "scripts: installing flatten (runtime dependencies only)" >&2
        # A regular (wheel) install: no editable-install machinery and no setuptools notice.
        "${pip[@]}" "$REPO" >&2
    else
        echo "scripts: installing flatten and its test and development dependencies" >&2
        "${pip[@]}" --upgrade pip >&2
        # setuptools' "Editable installation" box only says a folder named flatten in the
        # working directory would shadow the install; here that folder is the install.
        PYTHONWARNINGS="ignore:Editable installation" "${pip[@]}" -e "$REPO[dev]" >&2
    fi
    touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
