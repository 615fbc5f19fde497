# Sourced by the scripts: make .venv with Python >= 3.11 and define pip_install and
# install_qidao.
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "qidao needs Python >= 3.11 (found $("$PYTHON" --version)); set PYTHON=..." >&2
  exit 1
}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
pip_install() { .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"; }
# qidao itself, editable, as a path entry (setuptools' "compat" mode): its default
# finder would lose to any folder named qidao beside a user's script (a clone of this
# repository, say), which Python then imports as an empty namespace package.
install_qidao() { pip_install --config-settings editable_mode=compat -e ".[$1]"; }
