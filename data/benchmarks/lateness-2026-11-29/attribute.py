"""Where a thread's delays over 200 us come from, in an ftrace text dump (record.sh).

python3 attribute.py TRACE TID: per kind, the count, percentiles and the episodes over 200 us: the thread's
wake-up (sched_waking to running), its hrtimer firing late against its expiry, softirqs on its CPU while it
ran (inside a sendmmsg or not), its system calls, time off the CPU while runnable, and gaps on its CPU with no
event at all while it ran (the virtual CPU away, or long work without an event); and what ran on the CPU
before the thread in each wake-up over 200 us."""
import collections
import re
import sys

OVER_S = 200e-6
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+)(?:: |\(| -> )(.*)$")
SYSCALLS = ("sys_sendmmsg", "sys_ppoll", "sys_sched_yield", "sys_recvfrom", "sys_recvmmsg")


def attribute(path: str, tid: str) -> None:
    current: dict[int, str] = {}
    last_event: dict[int, float] = {}
    kinds: dict[str, list[float]] = collections.defaultdict(list)
    in_syscall: dict[str, float] = {}
    timers: dict[str, int] = {}
    off_at = waking_at = softirq_at = None
    off_state, softirq_in_send = "", False
    gaps: list[float] = []
    ran_before: collections.Counter[str] = collections.Counter()
    first = ts = None
    for text in open(path, errors="replace"):
        m = LINE.match(text)
        if not m:
            continue
        pid, cpu, ts, event, args = m.group(2), int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)
        first = ts if first is None else first
        if current.get(cpu) == tid and cpu in last_event and ts - last_event[cpu] > OVER_S:
            gaps.append(ts - last_event[cpu])
        last_event[cpu] = ts
        if event == "sched_switch":
            sw = re.search(r"prev_comm=(.*) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)", args)
            prev_comm, prev, state, nxt = sw.group(1), sw.group(2), sw.group(3), sw.group(4)
            current[cpu] = nxt
            if prev == tid:
                off_at, off_state = ts, state
            if nxt == tid and off_at is not None:
                if off_state.startswith("R"):
                    kinds["off the CPU while runnable"].append(ts - off_at)
                elif waking_at is not None:
                    kinds["wake-up (waking to running)"].append(ts - waking_at)
                    if ts - waking_at > OVER_S:
                        ran_before[prev_comm] += 1
                waking_at = None
        elif event == "sched_waking" and f"pid={tid} " in args:
            waking_at = ts
        elif pid == tid and event in SYSCALLS:
            if " -> " in text:
                if event in in_syscall:
                    kinds[event].append(ts - in_syscall.pop(event))
            else:
                in_syscall[event] = ts
        elif pid == tid and event == "hrtimer_start" and "hrtimer_wakeup" in args:
            hm = re.search(r"hrtimer=(\S+) .*expires=(\d+)", args)
            timers[hm.group(1)] = int(hm.group(2))
        elif event == "hrtimer_expire_entry" and "hrtimer_wakeup" in args:
            hm = re.search(r"hrtimer=(\S+) .*now=(\d+)", args)
            if hm.group(1) in timers:
                kinds["its timer firing late"].append((int(hm.group(2)) - timers.pop(hm.group(1))) / 1e9)
        elif event == "softirq_entry" and current.get(cpu) == tid:
            softirq_at, softirq_in_send = ts, "sys_sendmmsg" in in_syscall
        elif event == "softirq_exit" and current.get(cpu) == tid and softirq_at is not None:
            kind = "softirq on its CPU, in a sendmmsg" if softirq_in_send else "softirq on its CPU, elsewhere"
            kinds[kind].append(ts - softirq_at)
            softirq_at = None
    print(f"thread {tid}, {ts - first:.1f} s of trace")
    print("| kind | count | p50 us | p99 us | max us | over 200 us | their sum ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind, values in sorted(kinds.items()):
        values.sort()
        over = [v for v in values if v > OVER_S]
        print(f"| {kind} | {len(values)} | {values[len(values) // 2] * 1e6:.0f} | "
              f"{values[int(len(values) * 0.99)] * 1e6:.0f} | {values[-1] * 1e6:.0f} | {len(over)} | "
              f"{sum(over) * 1e3:.1f} |")
    print(f"| no event on its CPU while it ran | | | | {max(gaps, default=0) * 1e6:.0f} | {len(gaps)} | "
          f"{sum(gaps) * 1e3:.1f} |")
    print("\nWhat ran before it in the wake-ups over 200 us: " +
          ", ".join(f"{comm} {n}" for comm, n in ran_before.most_common()))


if __name__ == "__main__":
    attribute(sys.argv[1], sys.argv[2])
