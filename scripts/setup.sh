#!/usr/bin/env bash
# All set-up for prbench on a fresh Debian machine that has the Rust toolchain and Python:
# system packages, then the pinned models. Idempotent; with everything present it takes well
# under 2 s (model files are checked by their verified stamps, see fetch-models.sh).
#
#   scripts/setup.sh           everything the main job needs: packages, test models, the 1.5B judge
#   scripts/setup.sh --tests   what `cargo test` needs: packages, the small test models, the
#                              reference Python (pyarrow + PyYAML, for the export tests),
#                              llama.cpp's server (the xllamacpp wheel, for the remote tests),
#                              vLLM on CPU, OpenRLHF's reward server and TRL (scripts/engines.sh:
#                              the real-engine and RL tests; ~3 GB of pinned wheels, once) and
#                              mdBook (CI builds the user guide, docs/guide)
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
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

have() { command -v "$1" >/dev/null 2>&1; }
# bindgen (clang-sys) needs the unversioned development name, libclang.so or libclang-N.so, which
# libclang-dev provides: a machine with only the runtime (libclang1-N: libclang.so.1,
# libclang-N.so.1) or libclang-cpp has a libclang that bindgen does not load ("Unable to find
# libclang"), so those do not count.
have_libclang() {
  local dirs=(/usr/lib/llvm-*/lib /usr/lib/*)
  [[ -n "${LIBCLANG_PATH:-}" ]] && dirs=("$LIBCLANG_PATH")
  local d
  for d in "${dirs[@]}"; do
    compgen -G "$d/libclang.so" >/dev/null && return 0
    compgen -G "$d/libclang-[0-9]*.so" >/dev/null && return 0
  done
  return 1
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

# The reference Python of prbench-data's export test (tests/export_pyarrow.rs runs
# tools/read_prb_export.py with it): pyarrow and PyYAML pinned by version and by the sha256 of
# their manylinux x86_64 wheels for CPython 3.11-3.14 (from PyPI's JSON API), installed with
# --require-hashes into a venv under $PRBENCH_TOOLS that is reused while its marker names the same
# pins and interpreter. The venv name is also in the test; change both together.
pyref_setup() {
  local tools="${PRBENCH_TOOLS:-$HOME/.cache/prbench/tools}"
  local venv="$tools/pyref-pyarrow26.0.1-pyyaml6.0.4"
  local reqs='pyarrow==26.0.1 \
    --hash=sha256:39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c \
    --hash=sha256:c718bf97a92a6dea97fd1062c3b9f9e2e83cb9cc926e752289fa4ffff41738f9 \
    --hash=sha256:f71221bbc7707e3fad920d0478db9350791d4714ec445299ee0d56559fbc156c \
    --hash=sha256:7ae48ab53610b85e004b03bccff593fbdf22186d0ab48ed42c90797915dac814
PyYAML==6.0.4 \
    --hash=sha256:622aa875fa6533f25fedcffe23079357d65a690d462200afed5d8e9d0e01ebee \
    --hash=sha256:93bfb2459195406a518e2f487a9bbf01df240175f31e06f5a252ac6734c7bbf0 \
    --hash=sha256:50588147ab2c6a59b5f990a4905db80899a6c2bd197e046a6201f1e67587e794 \
    --hash=sha256:c604dc2613c417130479cdd6e55c2faa691b6365aa82b3dafddfcecc2eaf1ac7'
  local stamp
  stamp=$({ printf '%s\n' "$reqs"; python3 -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
  local marker="$venv/.prbench-installed-$stamp"
  if [[ -f "$marker" && -x "$venv/bin/python" ]]; then
    echo "setup: reference Python (pyarrow 26.0.1, PyYAML 6.0.4) present: $venv/bin/python"
    return
  fi
  rm -rf "$venv"
  mkdir -p "$tools"
  local tmp
  tmp=$(mktemp -d)
  printf '%s\n' "$reqs" >"$tmp/requirements.txt"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    --require-hashes -r "$tmp/requirements.txt" >&2; then
    rm -rf "$tmp" "$venv"
    echo "setup: installing pyarrow 26.0.1 and PyYAML 6.0.4 failed (they need CPython 3.11-3.14 on x86_64 Linux)" >&2
    exit 1
  fi
  rm -rf "$tmp"
  touch "$marker"
  echo "setup: reference Python (pyarrow 26.0.1, PyYAML 6.0.4) installed: $venv/bin/python"
}

# mdBook, which renders the user guide (docs/guide; CI runs `mdbook build docs/guide`). Not a
# Debian package here: built from crates.io with `cargo install`, the version pinned and
# --locked (every dependency at the version and checksum of mdBook's own Cargo.lock), without
# the default features (serve, watch, search: `mdbook build` needs none of them), into
# $PRBENCH_TOOLS/mdbook-<version>, 2-3 minutes on 2 cores, once. It is reused while that binary
# reports the pinned version; $PRBENCH_TOOLS/bin/mdbook points to it (the path .ci/run uses).
mdbook_setup() {
  local version=0.4.52
  local tools="${PRBENCH_TOOLS:-$HOME/.cache/prbench/tools}"
  local root="$tools/mdbook-$version"
  local bin="$root/bin/mdbook"
  if [[ -x "$bin" && "$("$bin" --version 2>/dev/null)" == "mdbook v$version" ]]; then
    mkdir -p "$tools/bin"
    ln -sfn "$bin" "$tools/bin/mdbook"
    echo "setup: mdBook $version present: $bin"
    return
  fi
  rm -rf "$root"
  mkdir -p "$tools/bin"
  echo "setup: building mdBook $version from crates.io (2-3 minutes, once)"
  # From $tools, not the repository: the workspace's .cargo/config.toml is not mdBook's.
  if ! (cd "$tools" && cargo install --quiet mdbook --version "=$version" --locked \
    --no-default-features --root "$root") >&2; then
    rm -rf "$root"
    echo "setup: cargo install mdbook $version failed" >&2
    exit 1
  fi
  ln -sfn "$bin" "$tools/bin/mdbook"
  echo "setup: mdBook $version installed: $bin"
}

if ((tests_only)); then
  bash scripts/fetch-models.sh
  pyref_setup
  bash scripts/llama-server.sh install
  bash scripts/engines.sh install
  mdbook_setup
else
  bash scripts/fetch-models.sh --judge
fi
echo "setup: ready"
