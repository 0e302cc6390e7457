#!/bin/bash
# Run one command as root on a stock Debian kernel in a throw-away qemu guest, and return its exit
# status and output here. The guest boots the newest linux-image-6.12.*+deb12-amd64 of
# bookworm-backports (downloaded once, cached), mounts this machine's root filesystem read-only over
# 9p with tmpfs on /tmp, /run, /var/tmp and /sys/fs/bpf, and the checkout read-write at its own path,
# so the checkout's build/ and .venv run unchanged; the kernel's modules load on demand from the cache
# (veth, netem, ...: the guest's modprobe helper points there). This machine's kernel is not touched.
# Usage: scripts/vm-run.sh [--kernel PKG] [--accel kvm|tcg] [--mem MB] [--cpus N] [--timeout S] -- CMD...
# Needs qemu-system-x86, busybox-static and kmod (apt-get install qemu-system-x86 busybox-static kmod).
# Cache: $BBRKIT_VM_CACHE, default ~/.cache/bbrkit-vm. The command's output is also kept in
# build/vm/output (its exit status in build/vm/rc).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${BBRKIT_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bbrkit-vm}
suite="bookworm-backports"
mirror="http://deb.debian.org/debian"
kernel_pkg=""
accel=""
mem_mb=2048
cpus=2
timeout_s=3600

die() {
	echo "vm-run: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--kernel | --accel | --mem | --cpus | --timeout) [ $# -ge 2 ] || die "option $1 needs a value" ;;
	esac
	case "$1" in
	--kernel) kernel_pkg=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--mem) mem_mb=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--) shift; break ;;
	*) die "unknown option '$1' (usage: vm-run.sh [--kernel PKG] [--accel kvm|tcg] [--mem MB] [--cpus N] [--timeout S] -- CMD...)" ;;
	esac
done
[ $# -gt 0 ] || die "no command given (usage: vm-run.sh [options] -- CMD...)"
for n in "$mem_mb" "$cpus" "$timeout_s"; do
	case "$n" in '' | *[!0-9]*) die "not a positive number: '$n'" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "must run as root (qemu shares / with the guest as root)"
missing=""
for tool in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static depmod:kmod dpkg-deb:dpkg; do
	command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool#*:}"
done
[ -z "$missing" ] || die "missing packages:$missing (apt-get install$missing)"
busybox=$(command -v busybox)
file -L "$busybox" | grep -q 'statically linked' || die "$busybox is not static (apt-get install busybox-static)"

# A PVM host (kvm_pvm) runs only guest kernels built for PVM: a stock kernel stops in its
# decompressor with a KVM emulation failure, so there the guest runs under TCG (slow, but the same
# kernel).
if [ -z "$accel" ]; then
	if [ -w /dev/kvm ] && [ ! -d /sys/module/kvm_pvm ]; then accel=kvm; else accel=tcg; fi
	[ "$accel" = kvm ] || echo "vm-run: no usable KVM (/dev/kvm missing or a PVM host): the guest runs under TCG" >&2
fi
case "$accel" in
kvm) qemu_cpu=(-accel kvm -cpu host) ;;
tcg) qemu_cpu=(-accel "tcg,thread=multi" -cpu max) ;;
*) die "unknown accelerator '$accel' (kvm or tcg)" ;;
esac

work=$(mktemp -d /tmp/bbrkit-vm.XXXXXX)
qemu_pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill "$qemu_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the kernel: the Debian package, unpacked once into the cache ------------------------------------
apt_opts=(-o "Dir::Etc::SourceList=$cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$cache/apt/lists" -o "Dir::Cache=$cache/apt/cache" -o APT::Sandbox::User=root)
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/debs"
echo "deb $mirror $suite main" >"$cache/apt/sources.list"
if [ -z "$kernel_pkg" ]; then
	# The package lists are refreshed once a day; the newest 6.12 build is taken.
	if [ -z "$(find "$cache/apt/lists" -name '*Packages*' -mtime -1 2>/dev/null)" ]; then
		apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update of $suite failed"
	fi
	kernel_pkg=$(apt-cache "${apt_opts[@]}" search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' |
		cut -d' ' -f1 | sort -V | tail -n1)
	[ -n "$kernel_pkg" ] || die "no linux-image-6.12.*+deb12-amd64 in $suite"
fi
kver=${kernel_pkg#linux-image-}
kdir="$cache/$kver"
if [ ! -f "$kdir/.done" ]; then
	if ! compgen -G "$cache/debs/${kernel_pkg}_*.deb" >/dev/null; then
		[ -n "$(find "$cache/apt/lists" -name '*Packages*' 2>/dev/null)" ] ||
			apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update of $suite failed"
		(cd "$cache/debs" && apt-get "${apt_opts[@]}" -q download "$kernel_pkg" >&2) ||
			die "cannot download $kernel_pkg from $suite"
	fi
	rm -rf "$kdir"
	mkdir -p "$kdir"
	dpkg-deb -x "$(compgen -G "$cache/debs/${kernel_pkg}_*.deb" | head -n1)" "$kdir/root"
	depmod -b "$kdir/root" "$kver"
	touch "$kdir/.done"
fi
vmlinuz="$kdir/root/boot/vmlinuz-$kver"
[ -f "$vmlinuz" ] || die "$kernel_pkg has no /boot/vmlinuz-$kver"

# --- the initramfs: static busybox, the 9p modules, an init that mounts the host root ---------------
mkdir -p "$work/initrd/bin" "$work/initrd/mods" "$work/initrd/newroot"
cp "$busybox" "$work/initrd/bin/busybox"
n=0
for mod in $(for m in 9pnet_virtio 9p; do modprobe -d "$kdir/root" -S "$kver" --show-depends "$m"; done |
	awk '$1 == "insmod" && !seen[$2]++ {print $2}'); do
	n=$((n + 1))
	xz -dc "$mod" >"$work/initrd/mods/$(printf %02d "$n")-$(basename "${mod%.xz}")"
done
[ "$n" -gt 0 ] || die "cannot find the 9p modules of $kver"

out="$repo/build/vm"
mkdir -p "$out"
rm -f "$out/rc" "$out/output"
cwd=$PWD
case "$cwd/" in "$repo"/*) ;; *) cwd=$repo ;; esac
{
	printf 'cd %q\n' "$cwd"
	printf 'export PATH=%q\n' "$repo/build:$repo/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	printf '%q ' "$@"
	echo
} >"$work/initrd/cmd"
cat >"$work/initrd/init" <<EOF
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
/bin/busybox mount -t devtmpfs dev /dev
for m in /mods/*.ko; do /bin/busybox insmod "\$m" || echo "vm-run: cannot load \$m"; done
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /newroot ||
	{ echo "vm-run: cannot mount the host root"; /bin/busybox dmesg | /bin/busybox tail -n 5; /bin/busybox poweroff -f; }
/bin/busybox mount -t tmpfs -o mode=1777 tmp /newroot/tmp
/bin/busybox mount -t tmpfs -o mode=755 run /newroot/run
/bin/busybox mount -t tmpfs -o mode=1777 vartmp /newroot/var/tmp
/bin/busybox mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap checkout /newroot$repo
/bin/busybox cp /cmd /newroot/run/vm-cmd
/bin/busybox mount --move /proc /newroot/proc
/bin/busybox mount --move /sys /newroot/sys
/bin/busybox mount --move /dev /newroot/dev
exec /bin/busybox switch_root /newroot /bin/bash -c '
	mount -t bpf bpf /sys/fs/bpf
	mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm
	printf "#!/bin/sh\\nexec /usr/sbin/modprobe -d %s \\"\\\$@\\"\\n" $kdir/root > /run/modprobe
	chmod +x /run/modprobe && echo /run/modprobe > /proc/sys/kernel/modprobe
	ip link set lo up
	stty -onlcr 2>/dev/null
	export HOME=/tmp LANG=C.UTF-8
	bash /run/vm-cmd 2>&1 | tee $out/output
	echo \${PIPESTATUS[0]} > $out/rc
	sync
	echo o > /proc/sysrq-trigger
	sleep 10'
EOF
chmod +x "$work/initrd/init"
(cd "$work/initrd" && find . | "$busybox" cpio -o -H newc 2>/dev/null) | gzip -1 >"$work/initrd.gz"

# --- the guest ---------------------------------------------------------------------------------------
echo "vm-run: booting $kver ($accel, $cpus cpus, $mem_mb MB): $*" >&2
timeout "$timeout_s" qemu-system-x86_64 "${qemu_cpu[@]}" -m "$mem_mb" -smp "$cpus" -nodefaults -no-reboot \
	-display none -monitor none -serial stdio -nic none \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 sysrq_always_enabled=1" \
	-virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap" \
	-virtfs "local,path=$repo,mount_tag=checkout,security_model=passthrough,multidevs=remap" </dev/null &
qemu_pid=$!
wait "$qemu_pid" || true
qemu_pid=""
[ -f "$out/rc" ] || die "the guest ended without the command's exit status (output above)"
exit "$(cat "$out/rc")"
