#!/usr/bin/env bash
# Runs the README's two commands, exactly as written, on a minimal fresh Debian (bookworm)
# made by debootstrap, with this machine's Rust toolchain bind-mounted (~/.rustup, ~/.cargo)
# and Python 3 as the only extra package: the machine a new user starts from. Run as root,
# by hand (it takes a full build and test run, ~1 h on 2 cores):
#
#   tools/fresh_system_check.sh ROOTFS [LOG]
#
# ROOTFS is created if missing (debootstrap is installed with apt-get if needed). A clean clone
# of this repository's HEAD goes to ROOTFS/work/prbench and ../shared beside it, as in CI.
# The host's extra CA certificates (/usr/local/share/ca-certificates) are installed in the
# chroot: where HTTPS goes through an inspecting proxy, pip and cargo need them, as they do on
# the host. Prints each step's exit code and wall time; LOG defaults to ROOTFS/check.log.
set -euo pipefail
root=${1:?usage: tools/fresh_system_check.sh ROOTFS [LOG]}
log=${2:-$root/check.log}
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ ! -x "$root/bin/bash" ]]; then
  command -v debootstrap >/dev/null || { apt-get update -q >/dev/null; apt-get install -y -q debootstrap >/dev/null; }
  debootstrap --variant=minbase --include=python3 bookworm "$root" http://deb.debian.org/debian >/dev/null
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
mounts=(proc sys dev dev/pts root/.rustup root/.cargo)
mkdir -p "$root/root/.rustup" "$root/root/.cargo" "$root/work"
mount --bind /proc "$root/proc"; mount --bind /sys "$root/sys"; mount --bind /dev "$root/dev"; mount --bind /dev/pts "$root/dev/pts"
mount --bind "$HOME/.rustup" "$root/root/.rustup"; mount --bind "$HOME/.cargo" "$root/root/.cargo"
cleanup() { for ((i=${#mounts[@]}-1; i>=0; i--)); do umount "$root/${mounts[$i]}" 2>/dev/null || true; done; }
trap cleanup EXIT

rm -rf "$root/work/prbench" "$root/work/shared"
git clone -q "$repo" "$root/work/prbench"
[[ -d "$repo/../shared" ]] && cp -a "$repo/../shared" "$root/work/shared"
commit=$(git -C "$repo" log --oneline -1)

# The two commands are read from the README's first code block, so the check runs what it says.
main_cmd=$(awk '/^```sh/{f=1;next} f&&/^```/{exit} f' "$repo/README.md" | sed -n 1p | sed 's/ *#.*$//')
test_cmd=$(awk '/^```sh/{f=1;next} f&&/^```/{exit} f' "$repo/README.md" | sed -n 2p | sed 's/ *#.*$//')

cat > "$root/work/check.sh" <<SH
cd /work/prbench
if command -v update-ca-certificates >/dev/null; then update-ca-certificates >/dev/null 2>&1; fi
echo "== commit: $commit"
for tool in cc cmake git python3 pip3; do printf '   %s: ' \$tool; command -v \$tool || echo absent; done
step() { local s=\$(date +%s); echo "== \$(date -u +%T) \$1"; bash -c "\$1"; local rc=\$?; echo "== rc=\$rc wall \$(( \$(date +%s) - s )) s: \$1"; return \$rc; }
step '$main_cmd'
step 'scripts/setup.sh'
step '$test_cmd'
SH
# A Debian minbase has no CA store until setup installs ca-certificates; the host's extra CAs are
# added once it exists (update-ca-certificates runs again inside setup's apt-get).
chroot "$root" /usr/bin/env -i HOME=/root PATH=/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  TERM=dumb LANG=C.UTF-8 /bin/bash /work/check.sh 2>&1 | tee "$log"
