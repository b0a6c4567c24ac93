#!/bin/busybox sh
# The guest's init (PID 1, inside the initramfs that prepare.sh builds):
# loads the modules for virtio, 9p and Soft-RoCE, mounts the host's root
# read-only and the work folders read-write at the same paths, brings up
# eth0 and rxe0 on it, then runs the command that guest.sh put on the
# kernel command line (base64, coll.cmd=) chrooted into the host's root,
# and powers off. The command is a script on the host (coll.script=), as
# guest.sh wrote it. Its status goes to the console as "coll-rxe: status
# N", which guest.sh reads.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod /modules/$m || echo "coll-rxe: insmod $m failed"; done
arg() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
node=$(arg coll.node); addr=$(arg coll.addr); script=$(arg coll.script); rw=$(arg coll.rw | tr , ' ')
mkdir -p /root
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /root
mount -t proc proc /root/proc
mount -t sysfs sys /root/sys
mount -t devtmpfs dev /root/dev
mkdir -p /root/dev/pts /root/dev/shm
mount -t devpts devpts /root/dev/pts
for t in /tmp /run /dev/shm; do mount -t tmpfs -o mode=1777 tmpfs /root$t; done
# After the tmpfs: a work tree under the host's /tmp stays visible.
i=0
for d in $rw; do
  mkdir -p /root$d 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rw$i /root$d || echo "coll-rxe: cannot mount $d"
  i=$((i + 1))
done
hostname "node$node"
ip link set lo up
ip link set eth0 up
ip addr add "$addr/24" dev eth0
echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6 2>/dev/null; echo 0 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6 2>/dev/null
ulimit -l unlimited
chroot /root /usr/bin/rdma link add rxe0 type rxe netdev eth0 || echo "coll-rxe: rdma link add failed"
echo "coll-rxe: node $node up"
chroot /root /bin/bash "$script" < /dev/null
echo "coll-rxe: status $?"
sync
poweroff -f
