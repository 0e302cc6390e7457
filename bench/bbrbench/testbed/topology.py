"""The dumbbell: sender hosts -> (delay namespace) -> router -> receiver, one network namespace each.

Addresses come from the 198.18.0.0/15 benchmarking range: sender i is 198.18.i.1/24 with the router at
198.18.i.254; the receiver is 198.19.0.1/24 with the router at 198.19.0.254. Namespaces are private to
the run, so concurrent runs may use the same addresses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..scenario import Scenario
from .netns import Namespaces
from .procs import command

RECEIVER_ADDR = "198.19.0.1"
ROUTER_RX_ADDR = "198.19.0.254"
BOTTLENECK_IF = "rx"
HOST_IF = "eth0"
DELAY_LEFT_IF = "dl"
DELAY_RIGHT_IF = "dr"
# The link emulator's namespace sits between the router's BOTTLENECK_IF and the receiver.
LINK_LEFT_IF = "ql"
LINK_RIGHT_IF = "qr"
# Kernel limits for socket memory count per-packet overhead (truesize), roughly doubling the payload.
SOCKET_MEM_OVERHEAD = 2


def sender_addr(index: int) -> str:
    return f"198.18.{index}.1"


def sender_gateway(index: int) -> str:
    return f"198.18.{index}.254"


@dataclass
class SenderHost:
    name: str
    index: int
    netns: str
    addr: str
    router_if: str
    delay_netns: str | None


@dataclass
class Topology:
    prefix: str
    scenario: Scenario
    router: str = ""
    receiver: str = ""
    hosts: dict[str, SenderHost] = field(default_factory=dict)
    namespaces: Namespaces = field(default_factory=Namespaces)
    # Set before build() when bbrkit-link carries the bottleneck: it gets a namespace of its own.
    link_netns: str | None = None

    def __post_init__(self) -> None:
        self.router = f"{self.prefix}-r"
        self.receiver = f"{self.prefix}-d"
        for s in self.scenario.senders:
            delay_ns = f"{self.prefix}-l{s.index}" if s.rtt_ms > 0 else None
            self.hosts[s.name] = SenderHost(
                name=s.name, index=s.index, netns=f"{self.prefix}-s{s.index}", addr=sender_addr(s.index),
                router_if=f"s{s.index}", delay_netns=delay_ns)

    def delays_in_link(self) -> None:
        """bbrkit-link serves the senders' delays (emulation.delay_mechanism "link"): no delay namespaces."""
        for h in self.hosts.values():
            h.delay_netns = None

    @property
    def sender_namespaces(self) -> list[str]:
        return [h.netns for h in self.hosts.values()]

    def build(self) -> None:
        wanted = [self.router, self.receiver, *([self.link_netns] if self.link_netns else [])]
        for h in self.hosts.values():
            wanted.append(h.netns)
            if h.delay_netns:
                wanted.append(h.delay_netns)
        for ns in wanted:
            self.namespaces.add(ns)
        if self.link_netns:
            links = [f"link add {BOTTLENECK_IF} netns {self.router} type veth peer name {LINK_LEFT_IF} "
                     f"netns {self.link_netns}",
                     f"link add {LINK_RIGHT_IF} netns {self.link_netns} type veth peer name {HOST_IF} "
                     f"netns {self.receiver}"]
        else:
            links = [f"link add {BOTTLENECK_IF} netns {self.router} type veth peer name {HOST_IF} "
                     f"netns {self.receiver}"]
        for h in self.hosts.values():
            if h.delay_netns:
                links.append(f"link add {HOST_IF} netns {h.netns} type veth peer name {DELAY_LEFT_IF} "
                             f"netns {h.delay_netns}")
                links.append(f"link add {DELAY_RIGHT_IF} netns {h.delay_netns} type veth peer name "
                             f"{h.router_if} netns {self.router}")
            else:
                links.append(f"link add {HOST_IF} netns {h.netns} type veth peer name {h.router_if} "
                             f"netns {self.router}")
        command(["ip", "-batch", "-"], input_text="\n".join(links) + "\n")
        self._configure()

    def _ns_batch(self, netns: str, lines: list[str]) -> None:
        command(["ip", "-n", netns, "-batch", "-"], input_text="\n".join(lines) + "\n")

    def interfaces(self, netns: str) -> list[str]:
        """The interfaces the topology gave @netns (each end of a veth pair)."""
        if netns == self.router:
            return [BOTTLENECK_IF] + [h.router_if for h in self.hosts.values()]
        if netns in (h.delay_netns for h in self.hosts.values()):
            return [DELAY_LEFT_IF, DELAY_RIGHT_IF]
        if netns == self.link_netns:
            return [LINK_LEFT_IF, LINK_RIGHT_IF]
        return [HOST_IF]

    def _configure(self) -> None:
        mtu = self.scenario.bottleneck.mtu
        sock_max = self.scenario.socket_buffer_bytes * SOCKET_MEM_OVERHEAD
        for ns in self.namespaces:
            lines = [f"link set {dev} mtu {mtu} up" for dev in self.interfaces(ns)]
            if ns == self.router:
                lines.append(f"addr add {ROUTER_RX_ADDR}/24 dev {BOTTLENECK_IF}")
                lines += [f"addr add {sender_gateway(h.index)}/24 dev {h.router_if}" for h in self.hosts.values()]
            elif ns == self.receiver:
                lines += [f"addr add {RECEIVER_ADDR}/24 dev {HOST_IF}", f"route add default via {ROUTER_RX_ADDR}"]
            else:
                host = next((h for h in self.hosts.values() if h.netns == ns), None)
                if host:
                    lines += [f"addr add {host.addr}/24 dev {HOST_IF}",
                              f"route add default via {sender_gateway(host.index)}"]
            self._ns_batch(ns, lines)
            # IPv6 off: no router solicitations or DAD packets through the bottleneck.
            sysctls = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
            if ns == self.router:
                sysctls.append("net.ipv4.ip_forward=1")
            elif ns == self.receiver or ns in self.sender_namespaces:
                # Autotuning stays on up to the scenario's socket buffer; no cached metrics between flows.
                sysctls += [f"net.ipv4.tcp_rmem=4096 131072 {sock_max}",
                            f"net.ipv4.tcp_wmem=4096 16384 {sock_max}",
                            "net.ipv4.tcp_no_metrics_save=1", f"net.ipv4.tcp_ecn={self.scenario.tcp_ecn}"]
            command(["sysctl", "-q", "-w", *sysctls], netns=ns)
            if not self.scenario.bottleneck.offloads:
                # Without segmentation offloads every queued skb is one MTU-sized packet, so packet limits
                # and backlog counts mean what they say.
                for dev in self.interfaces(ns):
                    command(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], netns=ns, check=False)
        if self.link_netns:
            # bbrkit-link queues, marks and drops per packet: the router segments in software before the
            # link (whatever bottleneck.offloads says for the hosts), and nothing merges them again.
            command(["ethtool", "-K", BOTTLENECK_IF, "tso", "off", "gso", "off", "gro", "off"], netns=self.router)
            for dev in (LINK_LEFT_IF, LINK_RIGHT_IF):
                command(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"], netns=self.link_netns)

    def destroy(self) -> None:
        self.namespaces.destroy()
