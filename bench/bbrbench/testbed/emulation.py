"""Path emulation: the shaped FIFO (or AQM) bottleneck, random loss, and per-sender delay.

- Bottleneck on the router's interface towards the receiver: tbf (or htb) at the scenario's rate with a
  pfifo/bfifo child that holds the buffer, or an AQM child when the kernel has it. Where the kernel has
  no qdisc for the scenario's AQM, or the scenario needs a rate trace, burst loss or the step marker,
  bbrkit-link (testbed/linkemu.py) carries the bottleneck in a namespace between router and receiver.
- Random loss on the data path (senders -> receiver) by an nftables `numgen random` rule in the router.
- Delay in a namespace of its own between each sender and the router: netem where the kernel has it,
  otherwise the project's delay line (bbrkit-delay, driven by testbed/delayline.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from .. import aqm, ratetrace
from ..aqm import AQMS
from ..errors import HarnessError, NotRunnable
from ..placement import PLACEMENTS
from ..scenario import Bottleneck, Scenario
from ..scenario.model import Sender
from . import cpuplace, delayline, linkemu
from .procs import command, find_binary
from .system import have_tool, qdisc_available
from .topology import BOTTLENECK_IF, DELAY_LEFT_IF, DELAY_RIGHT_IF, LINK_LEFT_IF, LINK_RIGHT_IF, Topology

log = logging.getLogger(__name__)
ROOT_HANDLE = "1:"
LEAF_HANDLE = "10:"
NFT_TABLE = "bbrbench"
# numgen draws uniformly in [0, LOSS_SCALE); drop when below p * LOSS_SCALE.
LOSS_SCALE = 1_000_000_000
NETEM_LIMIT_PACKETS = 1_000_000
KERNEL = "kernel"
LINK = "bbrkit-link"
# bottleneck.packet_log: each direction's packets in Mahimahi mm-link's log format, in the run's raw/.
MM_LOG_FORWARD = "link-forward.mm"
MM_LOG_REVERSE = "link-reverse.mm"
# Where the link runs and the kernel has no netem, the link serves each sender's path delay after the bottleneck
# (--src-delay) instead of a delay line per sender: one user-space hop per packet instead of two, and one thread
# fewer per sender competing for the CPUs (the link's late departures halved, docs/link-timing.md). The link
# keeps a line per distinct delay, at most this many (its LS_MAX_SRC_LINES); more take delay lines.
MAX_LINK_SOURCE_DELAYS = 16
# netem's probe needs an argument to be created.
NETEM_PROBE_ARGS = ("delay", "1ms")


def bottleneck_impl(scenario: Scenario, probe_netns: str) -> str:
    """KERNEL or LINK for the bottleneck; raises NotRunnable when neither can run it."""
    b = scenario.bottleneck
    spec = AQMS[b.aqm]
    in_kernel = spec.qdisc is not None and (
        spec.config is None or (not b.needs_link and qdisc_available(spec.qdisc, probe_netns, spec.probe_args)))
    if b.emulator == KERNEL or (b.emulator == "auto" and in_kernel and not b.needs_link):
        if not in_kernel:
            raise NotRunnable(f"bottleneck.aqm = {b.aqm!r}: this kernel has no {spec.qdisc} qdisc "
                              f"(CONFIG_{spec.config} is off); the scenario cannot run here")
        return KERNEL
    if find_binary(linkemu.BINARY_NAME, linkemu.BINARY_ENV) is None:
        raise NotRunnable(f"the bottleneck needs {linkemu.BINARY_NAME}, which is neither on PATH nor built (make)")
    if not have_tool("ethtool"):
        raise NotRunnable(f"{linkemu.BINARY_NAME} needs ethtool to turn segmentation offloads off")
    return LINK


def delay_mechanism(scenario: Scenario, probe_netns: str, link: bool = False) -> str | None:
    """'netem', 'link' (@link: bbrkit-link runs the bottleneck and serves the senders' delays too),
    'delayline' or None (no sender has a delay); raises NotRunnable when none exists."""
    if all(s.rtt_ms == 0 for s in scenario.senders):
        return None
    if qdisc_available("netem", probe_netns, NETEM_PROBE_ARGS):
        return "netem"
    if link and len({s.rtt_ms for s in scenario.senders if s.rtt_ms > 0}) <= MAX_LINK_SOURCE_DELAYS:
        return "link"
    if find_binary(delayline.BINARY_NAME, delayline.BINARY_ENV) is None:
        raise NotRunnable(f"senders need delay: the kernel has no netem and {delayline.BINARY_NAME} is neither "
                          f"on PATH nor built (make)")
    return "delayline"


def xdp_pass_object() -> Path | None:
    """The XDP program cpu_placement "napi" attaches, found as bbrkit-link is (testbed/cpuplace.py)."""
    return cpuplace.xdp_pass_object(find_binary(linkemu.BINARY_NAME, linkemu.BINARY_ENV))


def plan(topo: Topology, probe_netns: str) -> str | None:
    """Everything @topo's scenario needs from the kernel, checked before the topology is built; then a
    namespace for bbrkit-link where it carries the bottleneck, and no delay namespaces where it serves the
    senders' delays (call before topo.build()). Returns the delay mechanism."""
    scenario = topo.scenario
    impl = bottleneck_impl(scenario, probe_netns)
    if impl == KERNEL and PLACEMENTS[scenario.cpu_placement].pin_link:
        raise NotRunnable(f"cpu_placement = {scenario.cpu_placement!r}: pins bbrkit-link's thread, and this "
                          f"kernel runs the bottleneck itself (bottleneck.emulator = \"bbrkit-link\" runs the link)")
    if PLACEMENTS[scenario.cpu_placement].napi and xdp_pass_object() is None:
        raise NotRunnable(f"cpu_placement = {scenario.cpu_placement!r}: needs the XDP program "
                          f"{cpuplace.XDP_PASS_OBJECT}, which is not built (make)")
    if scenario.bottleneck.loss_pct > 0 and not have_tool("nft"):
        raise NotRunnable("bottleneck.loss_pct: needs nftables (the nft command) for random loss")
    if not scenario.bottleneck.offloads and not have_tool("ethtool"):
        raise NotRunnable("bottleneck.offloads = false: needs ethtool to turn segmentation offloads off")
    delay = delay_mechanism(scenario, probe_netns, impl == LINK)
    if impl == LINK:
        topo.link_netns = f"{topo.prefix}-q"
    if delay == "link":
        topo.delays_in_link()
    return delay


class Emulation:
    def __init__(self, topo: Topology, delay: str | None, work_dir: Path | None = None) -> None:
        """work_dir receives bbrkit-link's time series and generated traces (a temporary one if None)."""
        self.topo = topo
        self.scenario = topo.scenario
        self.delay = delay
        self.delay_lines: list[Any] = []
        self.delay_line_senders: list[str] = []  # whose each delay line is, for the trust check's reasons
        self.link: linkemu.LinkEmulator | None = None
        self.reverse_path_problem: str | None = None
        self.work_dir = work_dir
        self.cpu = cpuplace.plan(self.scenario.cpu_placement)
        if self.cpu.note:
            log.info("note: %s", self.cpu.note)

    @property
    def link_log(self) -> Path | None:
        return self.work_dir / "link.csv" if self.link and self.work_dir else None

    def start(self) -> None:
        if self.cpu.rps_cpus:
            cpuplace.steer_receive(self.topo, self.cpu.rps_cpus)
        if self.cpu.napi:
            program = xdp_pass_object()
            if program is None:
                raise HarnessError(f"cpu_placement napi: {cpuplace.XDP_PASS_OBJECT} is not built (make)")
            cpuplace.thread_receive(self.topo, program)
        if self.delay == "link" and not self.topo.link_netns:
            raise HarnessError("the senders' delays were given to bbrkit-link, and no link runs")
        if self.topo.link_netns:
            self._link()
        else:
            self._bottleneck()
        if self.scenario.bottleneck.loss_pct > 0:
            self._loss()
        if self.delay and self.delay != "link":
            self._delays()

    def _tc(self, *args: str) -> None:
        command(["tc", *args], netns=self.topo.router)

    def leaf_args(self) -> list[str]:
        b = self.scenario.bottleneck
        return aqm.qdisc_args(b.aqm, b.aqm_params, b.limit_packets, b.limit_bytes, b.buffer_bytes)

    def _bottleneck(self) -> None:
        b = self.scenario.bottleneck
        rate = f"{int(b.rate_bps)}bit"
        dev = ["dev", BOTTLENECK_IF]
        if b.shaper == "tbf":
            self._tc("qdisc", "add", *dev, "root", "handle", ROOT_HANDLE, "tbf", "rate", rate,
                     "burst", str(b.burst_bytes), "limit", str(b.limit_bytes))
        else:
            self._tc("qdisc", "add", *dev, "root", "handle", ROOT_HANDLE, "htb", "default", "1")
            self._tc("class", "add", *dev, "parent", ROOT_HANDLE, "classid", "1:1", "htb", "rate", rate,
                     "ceil", rate, "burst", str(b.burst_bytes), "cburst", str(b.burst_bytes),
                     "quantum", str(b.frame_bytes))
        self._tc("qdisc", "add", *dev, "parent", "1:1", "handle", LEAF_HANDLE, *self.leaf_args())

    def link_options(self) -> list[str]:
        """bbrkit-link's options for the scenario's bottleneck."""
        b = self.scenario.bottleneck
        opts = ["--aqm", b.aqm, "--mtu", str(b.mtu)]
        if b.rate_trace or b.rate_shape:
            opts += ["--trace", str(self._trace_path())]
        else:
            opts += ["--rate-bps", str(int(b.rate_bps))]
        if b.buffer_bytes is not None and AQMS[b.aqm].byte_limit:
            opts += ["--limit-bytes", str(b.buffer_bytes)]
        else:
            opts += ["--limit-pkts", str(b.limit_packets)]
        opts += aqm.link_options(b.aqm_params)
        if b.jitter_ms:
            opts += ["--jitter-us", str(round(b.jitter_ms * 1000))]
        if b.gilbert_elliott:
            # netem's gemodel order, in percent: p r 1-h (loss when bad) 1-k (loss when good)
            opts += ["--ge", ",".join(f"{b.gilbert_elliott[k] * 100:g}%" for k in ("p", "r", "loss_bad", "loss_good"))]
        if self.link_log:
            opts += ["--log", str(self.link_log), "--log-interval-us",
                     str(max(100, round(1e6 / self.scenario.queue_sample_hz)))]
        if b.delay_ms:
            opts += ["--delay-us", str(round(b.delay_ms * 1000))]
        if b.policer:
            opts += ["--police", f"{round(b.policer['rate_mbit'] * 1e6)},{int(b.policer['burst_bytes'])}"]
        if b.reorder:
            opts += ["--reorder", f"{b.reorder['probability']:g},{int(b.reorder['gap'])}"]
        if b.duplicate_pct:
            opts += ["--duplicate", f"{b.duplicate_pct / 100:g}"]
        if b.stall:
            opts += ["--stall", f"{b.stall['percent']:g},{int(b.stall['us'])}"]
        if self.delay == "link":
            for s in self.scenario.senders:
                if s.rtt_ms > 0:
                    opts += ["--src-delay", f"{self.topo.hosts[s.name].addr},{round(s.rtt_ms * 1000)}"]
        if self.cpu.link_cpu is not None:
            opts += ["--cpu", str(self.cpu.link_cpu)]
        if b.ack_path:
            opts += ack_path_options(b.ack_path)
        if b.packet_log and self.work_dir:
            opts += ["--mm-log", str(self.work_dir / MM_LOG_FORWARD)]
            if b.ack_path:
                opts += ["--rev-mm-log", str(self.work_dir / MM_LOG_REVERSE)]
        return opts

    def _trace_path(self) -> Path:
        b = self.scenario.bottleneck
        if b.rate_trace:
            return ratetrace.resolve(b.rate_trace).resolve()
        assert b.rate_shape is not None and self.work_dir is not None
        return ratetrace.generate(b.rate_shape, self.scenario.duration_s, self.work_dir / "rate.trace").path

    def _link(self) -> None:
        if self.work_dir is None:
            raise HarnessError("bbrkit-link needs a directory for its time series")
        assert self.topo.link_netns is not None
        self.link = linkemu.LinkEmulator(self.topo.link_netns, LINK_LEFT_IF, LINK_RIGHT_IF,
                                         tag=f"{self.topo.prefix}-link", options=[])
        self.link.options = self.link_options()
        if not self.scenario.bottleneck.ack_path:
            # The ACKs are not shaped: the kernel forwards them faster than a user-space hop.
            self.reverse_path_problem = linkemu.kernel_reverse(self.topo.link_netns, LINK_RIGHT_IF, LINK_LEFT_IF)
            if self.reverse_path_problem is None:
                self.link.options.append("--rev-kernel")
        try:
            self.link.start()
        except Exception as exc:
            raise HarnessError(f"link emulator: {exc}") from None

    def implementation(self) -> str:
        """The bottleneck that ran, as results record it."""
        b = self.scenario.bottleneck
        if self.topo.link_netns:
            rate = f"trace {b.rate_trace}" if b.rate_trace else ("rate shape" if b.rate_shape else "constant rate")
            extra = "".join(f", {part}" for part in describe_conditions(b))
            if self.delay == "link":
                extra += ", each sender's RTT as a delay after the link"
            if self.link and (idle_us := self.link.ready_event.get("xdp_idle_us", -1)) > 0:
                extra += f", frames finding it idle that serialise in {idle_us} us or less forwarded by XDP"
            ack = (f"; {describe_ack_path(b.ack_path)}" if b.ack_path else
                   "; ACK path unshaped, " + ("the link's own thread (" + self.reverse_path_problem + ")"
                                               if self.reverse_path_problem else "kernel tc mirred redirect"))
            return f"{LINK} {AQMS[b.aqm].link_name}, {rate}{extra}{ack}"
        fixed = AQMS[b.aqm].kernel_fixed
        return (f"kernel {b.shaper} + {b.aqm if b.aqm != 'fifo' else ('bfifo' if b.buffer_bytes else 'pfifo')}"
                + (f" ({fixed})" if fixed else ""))

    def _loss(self) -> None:
        threshold = round(self.scenario.bottleneck.loss_pct / 100 * LOSS_SCALE)
        rules = (f"add table inet {NFT_TABLE}\n"
                 f"add chain inet {NFT_TABLE} loss {{ type filter hook forward priority 0; }}\n"
                 f"add rule inet {NFT_TABLE} loss oifname \"{BOTTLENECK_IF}\" "
                 f"numgen random mod {LOSS_SCALE} < {threshold} counter drop\n")
        command(["nft", "-f", "-"], netns=self.topo.router, input_text=rules)

    def _delays(self) -> None:
        for sender in self.scenario.senders:
            host = self.topo.hosts[sender.name]
            if host.delay_netns is None:
                continue
            if self.delay == "netem":
                self._netem(host.delay_netns, sender.delay_fwd_ms, sender.delay_rev_ms)
            else:
                self._delay_line(host.delay_netns, sender, host.index)

    def _netem(self, netns: str, fwd_ms: float, rev_ms: float) -> None:
        batch = ["link add br0 type bridge", f"link set {DELAY_LEFT_IF} master br0",
                 f"link set {DELAY_RIGHT_IF} master br0", "link set br0 up"]
        command(["ip", "-n", netns, "-batch", "-"], input_text="\n".join(batch) + "\n")
        for dev, ms in ((DELAY_RIGHT_IF, fwd_ms), (DELAY_LEFT_IF, rev_ms)):
            if ms > 0:
                command(["tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", f"{ms * 1000:.0f}us",
                         "limit", str(NETEM_LIMIT_PACKETS)], netns=netns)

    def _delay_line(self, netns: str, sender: Sender, index: int) -> None:
        line = delayline.DelayLine(netns, DELAY_LEFT_IF, DELAY_RIGHT_IF, round(sender.delay_fwd_ms * 1000),
                                   round(sender.delay_rev_ms * 1000), tag=f"{self.topo.prefix}-dl{index}")
        line.cpus = self.cpu.app_cpus
        self.delay_lines.append(line)
        self.delay_line_senders.append(sender.name)
        try:
            line.start()
        except Exception as exc:
            raise HarnessError(f"delay line for sender {index}: {exc}") from None

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"delay_mechanism": self.delay, "bottleneck": self.implementation(),
                               "cpu_placement": self.cpu.record()}
        out["qdisc"] = json.loads(command(["tc", "-s", "-j", "qdisc", "show", "dev", BOTTLENECK_IF],
                                          netns=self.topo.router).stdout or "[]")
        if self.link:
            try:
                out["link"] = self.link.stats()
                out["link_options"] = self.link.options
            except Exception as exc:
                out["link_error"] = str(exc)
        if self.scenario.bottleneck.loss_pct > 0:
            rules = command(["nft", "-j", "list", "table", "inet", NFT_TABLE], netns=self.topo.router,
                            check=False).stdout
            out["loss_dropped_packets"] = _nft_counter(rules)
        try:
            out["delay_lines"] = [{"sender": name, **line.stats()}
                                  for name, line in zip(self.delay_line_senders, self.delay_lines)]
        except Exception as exc:
            out["delay_lines_error"] = str(exc)
        return out

    def stop(self) -> None:
        """Delay lines and the link run as processes of their own; everything else goes with the namespaces.
        Stopped, each keeps its final counters for stats(), and a second stop() does nothing."""
        failures = []
        for line in [*self.delay_lines, *([self.link] if self.link else [])]:
            try:
                line.stop()
            except Exception as exc:
                failures.append(str(exc))
        if failures:
            raise HarnessError("; ".join(failures))


def ack_path_options(ack: dict[str, Any]) -> list[str]:
    """bbrkit-link's --rev- options for a scenario's ack_path (scenario.ACK_PATH_KEYS); --rev-aqm is always
    given, since any --rev- option is what makes the link shape that direction."""
    opts = ["--rev-aqm", ack["aqm"]]
    if ack["rate_trace"]:
        opts += ["--rev-trace", str(ratetrace.resolve(ack["rate_trace"]).resolve())]
    elif ack["rate_mbit"]:
        opts += ["--rev-rate-bps", str(round(ack["rate_mbit"] * 1e6))]
    for key, flag in (("delay_ms", "--rev-delay-us"), ("jitter_ms", "--rev-jitter-us")):
        if ack[key]:
            opts += [flag, str(round(ack[key] * 1000))]
    if ack["loss_pct"]:
        opts += ["--rev-loss", f"{ack['loss_pct'] / 100:g}"]
    if ack["buffer_packets"]:
        opts += ["--rev-limit-pkts", str(ack["buffer_packets"])]
    if ack["buffer_bytes"]:
        opts += ["--rev-limit-bytes", str(ack["buffer_bytes"])]
    agg = ack["aggregation"]
    if agg:
        if agg["kind"] == "slot":
            low = round(agg["interval_ms"] * 1000)
            high = round(agg["max_interval_ms"] * 1000) if agg["max_interval_ms"] else low
            spec = f"slot,{low},{high}" + (f",{agg['packets']}" if agg["packets"] else "")
        elif agg["kind"] == "count":
            spec = f"count,{agg['acks']},{round(agg['timeout_ms'] * 1000)}"
        else:
            spec = f"onoff,{round(agg['on_ms'] * 1000)},{round(agg['off_ms'] * 1000)}"
        opts += ["--rev-aggregate", spec]
    return opts


def describe_aggregation(agg: dict[str, Any]) -> str:
    if agg["kind"] == "slot":
        every = f"{agg['interval_ms']:g}" + (f"..{agg['max_interval_ms']:g}" if agg["max_interval_ms"] else "")
        limit = f", at most {agg['packets']} per slot" if agg["packets"] else ""
        return f"ACK aggregation: netem-like slot every {every} ms{limit}"
    if agg["kind"] == "count":
        return f"ACK aggregation: {agg['acks']} ACKs at a time (time-out {agg['timeout_ms']:g} ms)"
    return f"ACK aggregation: on {agg['on_ms']:g} ms / off {agg['off_ms']:g} ms"


def describe_conditions(b: Bottleneck) -> list[str]:
    """bbrkit-link's path conditions on the data direction, as results record them."""
    parts = []
    if b.delay_ms:
        parts.append(f"link delay {b.delay_ms:g} ms")
    if b.policer:
        parts.append(f"token-bucket policer (RFC 2697 single rate, no EBS) {b.policer['rate_mbit']:g} Mbit/s "
                     f"burst {int(b.policer['burst_bytes'])} bytes")
    if b.reorder:
        parts.append(f"netem-style reorder {b.reorder['probability']:g} gap {int(b.reorder['gap'])}")
    if b.duplicate_pct:
        parts.append(f"netem-style duplicate {b.duplicate_pct:g}%")
    if b.stall:
        parts.append(f"injected stalls: {b.stall['percent']:g}% of departures held {int(b.stall['us'])} us")
    return parts


def describe_ack_path(ack: dict[str, Any]) -> str:
    """The ACK path that ran, as results record it."""
    rate = (f"trace {ack['rate_trace']}" if ack["rate_trace"] else
            f"{ack['rate_mbit']:g} Mbit/s" if ack["rate_mbit"] else "no rate limit")
    parts = [f"ACK path {rate}", AQMS[ack["aqm"]].link_name]
    if ack["delay_ms"]:
        parts.append(f"delay {ack['delay_ms']:g} ms")
    if ack["jitter_ms"]:
        parts.append(f"jitter uniform 0..{ack['jitter_ms']:g} ms in order")
    if ack["loss_pct"]:
        parts.append(f"independent loss {ack['loss_pct']:g}%")
    if ack["aggregation"]:
        parts.append(describe_aggregation(ack["aggregation"]))
    return ", ".join(parts)


def _nft_counter(text: str) -> int | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    for item in data.get("nftables", []):
        for expr in item.get("rule", {}).get("expr", []):
            if "counter" in expr:
                return int(expr["counter"]["packets"])
    return None
