"""Path emulation: the shaped FIFO (or AQM) bottleneck, random loss, and per-sender delay.

- Bottleneck on the router's interface towards the receiver: tbf (or htb) at the scenario's rate with a
  pfifo/bfifo child that holds the buffer, or an AQM child when the kernel has it.
- Random loss on the data path (senders -> receiver) by an nftables `numgen random` rule in the router.
- Delay in a namespace of its own between each sender and the router: netem where the kernel has it,
  otherwise the project's delay line (bbrkit-delay, driven by testbed/delayline.py).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import HarnessError, NotRunnable
from ..scenario import Scenario
from . import delayline
from .netns import command, find_binary
from .system import have_tool, qdisc_available
from .topology import BOTTLENECK_IF, DELAY_LEFT_IF, DELAY_RIGHT_IF, Topology

ROOT_HANDLE = "1:"
LEAF_HANDLE = "10:"
NFT_TABLE = "bbrbench"
# numgen draws uniformly in [0, LOSS_SCALE); drop when below p * LOSS_SCALE.
LOSS_SCALE = 1_000_000_000
NETEM_LIMIT_PACKETS = 1_000_000
AQM_CONFIG = {"fq_codel": "NET_SCH_FQ_CODEL", "codel": "NET_SCH_CODEL", "pie": "NET_SCH_PIE",
              "cake": "NET_SCH_CAKE", "netem": "NET_SCH_NETEM"}


def delay_mechanism(scenario: Scenario, probe_netns: str) -> str | None:
    """'netem', 'delayline' or None (no sender has a delay); raises NotRunnable when neither exists."""
    if all(s.rtt_ms == 0 for s in scenario.senders):
        return None
    if qdisc_available("netem", probe_netns):
        return "netem"
    if find_binary(delayline.BINARY_NAME, delayline.BINARY_ENV) is None:
        raise NotRunnable(f"senders need delay: the kernel has no netem and {delayline.BINARY_NAME} is neither "
                          f"on PATH nor built (make)")
    return "delayline"


def check_runnable(scenario: Scenario, probe_netns: str) -> str | None:
    """Everything the scenario needs from the kernel, checked before the topology is built.

    Returns the delay mechanism to use."""
    aqm = scenario.bottleneck.aqm
    if aqm != "fifo" and not qdisc_available(aqm, probe_netns):
        raise NotRunnable(f"bottleneck.aqm = {aqm!r}: this kernel has no {aqm} qdisc "
                          f"(CONFIG_{AQM_CONFIG[aqm]} is off); the scenario cannot run here")
    if scenario.bottleneck.loss_pct > 0 and not have_tool("nft"):
        raise NotRunnable("bottleneck.loss_pct: needs nftables (the nft command) for random loss")
    if not scenario.bottleneck.offloads and not have_tool("ethtool"):
        raise NotRunnable("bottleneck.offloads = false: needs ethtool to turn segmentation offloads off")
    return delay_mechanism(scenario, probe_netns)


class Emulation:
    def __init__(self, topo: Topology, delay: str | None) -> None:
        self.topo = topo
        self.scenario = topo.scenario
        self.delay = delay
        self.delay_lines: list[Any] = []

    def start(self) -> None:
        self._bottleneck()
        if self.scenario.bottleneck.loss_pct > 0:
            self._loss()
        if self.delay:
            self._delays()

    def _tc(self, *args: str) -> None:
        command(["tc", *args], netns=self.topo.router)

    def leaf_args(self) -> list[str]:
        b = self.scenario.bottleneck
        if b.aqm == "fifo":
            if b.buffer_bytes is not None:
                return ["bfifo", "limit", str(b.buffer_bytes)]
            return ["pfifo", "limit", str(b.buffer_packets)]
        extra = [item for key, value in b.aqm_params.items() for item in (key, value)]
        if b.aqm == "cake":
            return ["cake", "unlimited", "memlimit", str(b.limit_bytes), *extra]
        packets = b.buffer_packets if b.buffer_packets is not None else max(1, b.limit_bytes // b.frame_bytes)
        return [b.aqm, "limit", str(packets), *extra]

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
                self._delay_line(host.delay_netns, host.index, sender.delay_fwd_ms, sender.delay_rev_ms)

    def _netem(self, netns: str, fwd_ms: float, rev_ms: float) -> None:
        batch = ["link add br0 type bridge", f"link set {DELAY_LEFT_IF} master br0",
                 f"link set {DELAY_RIGHT_IF} master br0", "link set br0 up"]
        command(["ip", "-n", netns, "-batch", "-"], input_text="\n".join(batch) + "\n")
        for dev, ms in ((DELAY_RIGHT_IF, fwd_ms), (DELAY_LEFT_IF, rev_ms)):
            if ms > 0:
                command(["tc", "qdisc", "add", "dev", dev, "root", "netem", "delay", f"{ms * 1000:.0f}us",
                         "limit", str(NETEM_LIMIT_PACKETS)], netns=netns)

    def _delay_line(self, netns: str, index: int, fwd_ms: float, rev_ms: float) -> None:
        line = delayline.DelayLine(netns, DELAY_LEFT_IF, DELAY_RIGHT_IF, round(fwd_ms * 1000),
                                   round(rev_ms * 1000), tag=f"{self.topo.prefix}-dl{index}")
        self.delay_lines.append(line)
        try:
            line.start()
        except Exception as exc:
            raise HarnessError(f"delay line for sender {index}: {exc}") from None

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"delay_mechanism": self.delay}
        out["qdisc"] = json.loads(command(["tc", "-s", "-j", "qdisc", "show", "dev", BOTTLENECK_IF],
                                          netns=self.topo.router).stdout or "[]")
        if self.scenario.bottleneck.loss_pct > 0:
            rules = command(["nft", "-j", "list", "table", "inet", NFT_TABLE], netns=self.topo.router,
                            check=False).stdout
            out["loss_dropped_packets"] = _nft_counter(rules)
        try:
            out["delay_lines"] = [line.stats() for line in self.delay_lines]
        except Exception as exc:
            out["delay_lines_error"] = str(exc)
        return out

    def stop(self) -> None:
        """Delay lines run as processes of their own; everything else goes with the namespaces."""
        lines, self.delay_lines = self.delay_lines, []
        failures = []
        for line in lines:
            try:
                line.stop()
            except Exception as exc:
                failures.append(str(exc))
        if failures:
            raise HarnessError("; ".join(failures))


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
