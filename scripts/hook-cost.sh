#!/bin/bash
# What bbr2/bbr3's per-packet hooks cost other flows: a cubic iperf3 flow over a veth pair, REPS times
# with bbr3 attached (its transmit and loss-mark hooks run on every TCP skb of the host) and REPS times
# without, alternating; per run the system CPU per byte (/proc/stat busy time) and the hooks' own
# run time per byte (the kernel's BPF run-time statistics). Meant for a throw-away kernel
# (scripts/vm-run.sh -- scripts/hook-cost.sh): it attaches bbr3 and creates two network namespaces,
# removed on exit. Usage: hook-cost.sh [REPS] [SECONDS]
set -euo pipefail

reps=${1:-5}
seconds=${2:-4}
for n in "$reps" "$seconds"; do
	case "$n" in '' | *[!0-9]* | 0) echo "hook-cost: not a positive number: '$n'" >&2; exit 2 ;; esac
done
ns_s=hookcost-s
ns_r=hookcost-r
stats_was=$(cat /proc/sys/kernel/bpf_stats_enabled)
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	ip netns pids "$ns_r" 2>/dev/null | xargs -r kill 2>/dev/null || true
	ip netns del "$ns_s" 2>/dev/null || true
	ip netns del "$ns_r" 2>/dev/null || true
	bbrctl detach bbr3 >/dev/null 2>&1 || true
	echo "$stats_was" >/proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT

ip netns add "$ns_s"
ip netns add "$ns_r"
ip link add veth-s netns "$ns_s" type veth peer name veth-r netns "$ns_r"
ip -n "$ns_s" addr add 10.77.0.1/24 dev veth-s
ip -n "$ns_r" addr add 10.77.0.2/24 dev veth-r
for ns in "$ns_s" "$ns_r"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "veth-${ns#hookcost-}" up
done
ip netns exec "$ns_r" iperf3 -s -D
sleep 0.5
echo 1 >/proc/sys/kernel/bpf_stats_enabled

busy_ns() { # user+nice+system+irq+softirq of all CPUs, in ns
	awk -v hz="$(getconf CLK_TCK)" '/^cpu / {printf "%.0f\n", ($2 + $3 + $4 + $7 + $8) * 1e9 / hz}' /proc/stat
}
hook_stats() { # the attached hooks' run time (ns) and runs so far
	bpftool prog show --json | python3 -c 'import json, sys
hooks = [p for p in json.load(sys.stdin) if p.get("name", "").startswith("bbr3_pp")]
print(sum(p.get("run_time_ns", 0) for p in hooks), sum(p.get("run_cnt", 0) for p in hooks))'
}

printf '%-6s %3s %9s %12s %13s %11s\n' mode rep Mbit/s sys_ns/byte hook_ns/byte hook_ns/run
for rep in $(seq 1 "$reps"); do
	order="hooks none"
	[ $((rep % 2)) -eq 0 ] && order="none hooks"
	for mode in $order; do
		h0="0 0"
		if [ "$mode" = hooks ]; then
			bbrctl attach bbr3 >/dev/null
			h0=$(hook_stats)
		fi
		b0=$(busy_ns)
		bytes=$(ip netns exec "$ns_s" iperf3 -c 10.77.0.2 -C cubic -t "$seconds" -J |
			python3 -c 'import json, sys
end = json.load(sys.stdin)["end"]
assert end["sender_tcp_congestion"] == "cubic", end["sender_tcp_congestion"]
print(end["sum_sent"]["bytes"])')
		b1=$(busy_ns)
		h1="0 0"
		if [ "$mode" = hooks ]; then
			h1=$(hook_stats)
			bbrctl detach bbr3 >/dev/null
		fi
		awk -v m="$mode" -v r="$rep" -v s="$seconds" -v by="$bytes" -v b="$((b1 - b0))" -v h0="$h0" -v h1="$h1" \
			'BEGIN {split(h0, a); split(h1, z); n = z[2] - a[2]
			printf "%-6s %3d %9.1f %12.2f %13.4f %11s\n", m, r, by * 8 / s / 1e6, b / by, (z[1] - a[1]) / by,
				n ? sprintf("%.0f", (z[1] - a[1]) / n) : "-"}'
	done
done
