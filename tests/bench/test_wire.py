"""The wire processes' own errors (no root: construction checks only): a bad link emulator raises
LinkError and a bad delay line DelayLineError, siblings under WireError, so a caller that catches one
never catches the other's failure by accident."""
from __future__ import annotations

import pytest

from bbrbench.testbed.delayline import DelayLine, DelayLineError
from bbrbench.testbed.linkemu import LinkEmulator, LinkError
from bbrbench.testbed.wire import WireError


def test_a_bad_link_raises_the_links_error() -> None:
    with pytest.raises(LinkError, match="left_if and right_if are both 'a0'") as info:
        LinkEmulator("ns", "a0", "a0", tag="t", options=[])
    assert isinstance(info.value, WireError) and not isinstance(info.value, DelayLineError)


def test_a_bad_delay_line_raises_the_delay_lines_error() -> None:
    with pytest.raises(DelayLineError, match="delay_lr_us") as info:
        DelayLine("ns", "a0", "b0", -1, 0, tag="t")
    assert isinstance(info.value, WireError) and not isinstance(info.value, LinkError)
    with pytest.raises(DelayLineError, match="tag"):
        DelayLine("ns", "a0", "b0", 0, 0, tag="bad tag")
