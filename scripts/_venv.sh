# Shared by scripts/demo and scripts/test: make (once) and use the project's virtual environment.
# FLATTEN_VENV overrides where it lives (default: .venv in the repository).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${FLATTEN_VENV:-$REPO/.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "scripts: creating virtual environment in $VENV" >&2
    "$PYTHON" -m venv "$VENV"
fi
# Reinstall when pyproject.toml changed since the last install.
STAMP="$VENV/.flatten-installed"
if [ ! -f "$STAMP" ] || [ "$REPO/pyproject.toml" -nt "$STAMP" ]; then
    echo "scripts: installing flatten and its test dependencies" >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$REPO[dev]" >&2
    touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
