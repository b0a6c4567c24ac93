#!/usr/bin/env bash
# Makes what the Soft-RoCE guests boot, once, into the cache folder:
# Debian's own kernel (linux-image-amd64, downloaded and unpacked, not
# installed: the host's kernel has no RDMA) and a busybox initramfs with the
# modules for virtio, 9p and rdma_rxe. Installs QEMU, busybox and rdma-core's
# user space from Debian where missing.
#
#   tests/rxe/prepare.sh [CACHE]     (default: $RXE_CACHE, else ~/.cache/coll-rxe)
#
# Prints the cache folder. Exits 77 (ctest: skipped), with the reason, where
# the guests cannot be made here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${RXE_CACHE:-$HOME/.cache/coll-rxe}}
mkdir -p "$cache"

skip() { echo "rxe: skipped: $*" >&2; exit 77; }

packages=(qemu-system-x86 busybox-static kmod cpio rdma-core ibverbs-providers ibverbs-utils perftest iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || skip "needs ${missing[*]} (run as root, or install them)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2; } ||
    skip "cannot install ${missing[*]}"
fi

# The kernel: the version linux-image-amd64 points at.
version=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{sub("linux-image-", "", $2); print $2; exit}')
[ -n "$version" ] || skip "apt knows no linux-image-amd64"
kdir="$cache/kernel-$version"
if [ ! -f "$kdir/boot/vmlinuz-$version" ]; then
  (cd "$cache" && apt-get download "linux-image-$version" >&2 2>/dev/null) || skip "cannot download linux-image-$version"
  rm -rf "$kdir.tmp" && dpkg -x "$cache"/linux-image-"$version"_*.deb "$kdir.tmp" && rm -f "$cache"/linux-image-"$version"_*.deb
  depmod -b "$kdir.tmp" "$version"
  mv "$kdir.tmp" "$kdir"
fi

# The initramfs: busybox, the modules in the order modprobe would load them
# (rdma_rxe needs crc32_generic first: "failed to init crc32 algorithm"),
# and init.sh. Rebuilt when init.sh changes.
initrd="$cache/initrd-$version.cpio.gz"
if [ ! -f "$initrd" ] || [ "$here/init.sh" -nt "$initrd" ]; then
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root"/{bin,modules,proc,sys,dev,root}
  cp /bin/busybox "$root/bin/busybox"
  cp "$here/init.sh" "$root/init"
  chmod +x "$root/init"
  for m in virtio_pci virtio_net 9pnet_virtio 9p crc32_generic rdma_rxe; do
    modprobe -d "$kdir" -S "$version" --show-depends "$m"
  done | awk '$1 == "insmod" {print $2}' | awk '!seen[$0]++' > "$root/order.txt"
  while read -r path; do
    cp "$path" "$root/modules/"
    basename "$path" >> "$root/modules.order"
  done < "$root/order.txt"
  rm "$root/order.txt"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.tmp"
  mv "$initrd.tmp" "$initrd"
fi
ln -sf "kernel-$version/boot/vmlinuz-$version" "$cache/vmlinuz"
ln -sf "$(basename "$initrd")" "$cache/initrd.cpio.gz"
echo "$cache"
