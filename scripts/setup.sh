#!/usr/bin/env bash
# All set-up for prbench on a fresh Debian machine that has the Rust toolchain and Python:
# system packages, then the pinned models. Idempotent; with everything present it takes well
# under 2 s (model files are checked by their verified stamps, see fetch-models.sh).
#
#   scripts/setup.sh           everything the main job needs: packages, test models, the 1.5B judge
#   scripts/setup.sh --tests   what `cargo test` needs: packages and the small test models
#
# Packages: cmake, libclang and a C/C++ compiler (llama.cpp is compiled from source by the
# llama-cpp-2 crate and bindgen needs libclang), pip and venv (model download; the remote-engine
# tests' llama.cpp server), CA certificates (cargo and pip over HTTPS), git (the commit
# recorded in every run manifest); with --tests also Chromium and a font (prbench-browser opens
# the HTML pages in headless Chromium; screenshots need a font to show text). It installs what is
# missing with apt-get: directly as root, through sudo otherwise; if neither works it stops and
# prints the exact command to run.
set -euo pipefail
cd "$(dirname "$0")/.."

tests_only=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests_only=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

have() { command -v "$1" >/dev/null 2>&1; }
have_libclang() {
  [[ -n "${LIBCLANG_PATH:-}" ]] && compgen -G "$LIBCLANG_PATH/libclang*.so*" >/dev/null && return 0
  compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" >/dev/null || compgen -G "/usr/lib/*/libclang*.so*" >/dev/null
}

# Debian package for each missing piece.
need=()
{ have cc && have c++ && have make; } || need+=(build-essential)
have cmake || need+=(cmake)
have_libclang || need+=(libclang-dev)
have python3 || need+=(python3)
{ have python3 && python3 -m pip --version >/dev/null 2>&1; } || need+=(python3-pip)
{ have python3 && python3 -c 'import ensurepip, venv' >/dev/null 2>&1; } || need+=(python3-venv)
[[ -f /etc/ssl/certs/ca-certificates.crt ]] || need+=(ca-certificates)
have git || need+=(git)   # the build records the commit in every run manifest
if ((tests_only)); then
  have chromium || need+=(chromium)   # prbench-browser's tests drive it headless
  [[ -d /usr/share/fonts/truetype/dejavu ]] || need+=(fonts-dejavu-core)   # text in screenshots
fi

if ((${#need[@]})); then
  cmd=(apt-get install -y -q --no-install-recommends "${need[@]}")
  if [[ $(id -u) == 0 ]]; then
    sudo=()
  elif have sudo && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "setup: missing packages: ${need[*]}" >&2
    echo "setup: not root and no password-less sudo; run this, then run scripts/setup.sh again:" >&2
    echo "  sudo apt-get update && sudo ${cmd[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q >/dev/null
  "${sudo[@]}" "${cmd[@]}" >/dev/null
  # Check what was asked for is now there (a package name can change between releases).
  have cmake && have cc && have_libclang && python3 -m pip --version >/dev/null 2>&1 || {
    echo "setup: apt-get finished but cmake, cc, libclang or pip is still missing" >&2
    exit 1
  }
  if ((tests_only)) && ! have chromium; then
    echo "setup: apt-get finished but chromium is still missing" >&2
    exit 1
  fi
fi

if ((tests_only)); then
  bash scripts/fetch-models.sh
else
  bash scripts/fetch-models.sh --judge
fi
echo "setup: ready"
