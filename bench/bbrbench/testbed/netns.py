"""Network namespaces: made together and removed together with every process inside them, for the
harness, its benchmarks and the tests. A run's namespaces are named `<prefix>-<role>` (see runstate)."""

from __future__ import annotations

from collections.abc import Iterator

from .procs import command, kill_pids


def list_netns(check: bool = False) -> list[str]:
    """The namespaces' names (`ip netns list` writes `NAME` or `NAME (id: N)` a line); with @check a
    failing `ip` raises instead of listing none (the tests' leak checks must not go blind)."""
    result = command(["ip", "netns", "list"], check=check)
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def netns_pids(name: str) -> list[int]:
    """The processes running inside the namespace (none if it does not exist)."""
    return [int(p) for p in command(["ip", "netns", "pids", name], check=False).stdout.split() if p.isdigit()]


def remove_netns(name: str) -> None:
    """Kill whatever runs inside the namespace (deleting it alone would leave them running), then delete it."""
    kill_pids(netns_pids(name))
    command(["ip", "netns", "del", name], check=False)


class Namespaces:
    """Network namespaces made together and removed together, with every process inside them. A name is
    recorded before it is created, so destroy() after a failure half-way removes what exists."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, name: str) -> str:
        self.names.append(name)
        command(["ip", "netns", "add", name])
        command(["ip", "-n", name, "link", "set", "lo", "up"])
        return name

    def veth(self, netns_a: str, if_a: str, netns_b: str, if_b: str) -> None:
        """A veth pair with one end in each namespace (down, unaddressed)."""
        command(["ip", "link", "add", if_a, "netns", netns_a, "type", "veth", "peer", "name", if_b, "netns", netns_b])

    def destroy(self) -> None:
        for name in reversed(self.names):
            remove_netns(name)
        self.names.clear()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.names))

    def __enter__(self) -> Namespaces:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()
