#!/bin/bash
# record.sh OUT [TRACEFS]: one FQ-CoDel run of seed001/fig14-15-fqcodel (bbr1, 5 BDP) with ftrace on for 10 s
# from 10 s after bbrkit-link starts: the scheduler's switches and wake-ups, softirqs, hrtimers and the link's
# system calls, into OUT/trace.txt, the link's threads into OUT/link_tasks.txt. Run from the checkout as root
# (BBRKIT_LINK names another link binary). attribute.py OUT/trace.txt TID reads it.
set -u
out=$1 tr=${2:-/sys/kernel/tracing}
mkdir -p "$out"
[ -e "$tr/trace" ] || mount -t tracefs nodev "$tr"
echo 0 > "$tr/tracing_on"; echo > "$tr/trace"; echo mono > "$tr/trace_clock"; echo 200000 > "$tr/buffer_size_kb"
echo > "$tr/set_event"
for e in sched:sched_switch sched:sched_waking sched:sched_wakeup irq:softirq_entry irq:softirq_exit \
	irq:irq_handler_entry irq:irq_handler_exit timer:hrtimer_start timer:hrtimer_expire_entry; do
	echo "$e" >> "$tr/set_event"
done
for s in sendmmsg ppoll sched_yield recvmmsg recvfrom; do
	echo "syscalls:sys_enter_$s" >> "$tr/set_event"; echo "syscalls:sys_exit_$s" >> "$tr/set_event"
done
.venv/bin/python -m bbrbench -q sweep bench/bbrbench/scenarios/repro/seed001/fig14-15-fqcodel.toml --profile standard \
	--grid 'bottleneck.aqm=["fq_codel"]' --grid 'flows.*.algo=["bbr1"]' --grid 'bottleneck.buffer_bdp=[5]' \
	--reps 1 --out "$out/sweep" > "$out/sweep.log" 2>&1 &
sweep=$!
for _ in $(seq 60); do pgrep -x bbrkit-link > /dev/null && break; sleep 1; done
sleep 10
link=$(pgrep -x bbrkit-link | head -1)
for t in /proc/"$link"/task/*; do echo "$(basename "$t") $(cat "$t/comm")"; done > "$out/link_tasks.txt"
echo 1 > "$tr/tracing_on"; sleep 10; echo 0 > "$tr/tracing_on"
cat "$tr/trace" > "$out/trace.txt"
echo > "$tr/trace"; echo 1408 > "$tr/buffer_size_kb"; echo > "$tr/set_event"; echo local > "$tr/trace_clock"
wait $sweep
