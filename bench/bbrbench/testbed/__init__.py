"""Making the network and the traffic: namespaces and processes, topology, emulation (shaper, FIFO, delay
line, loss), iperf3 flows, sampling, system probes, and one run from a clean slate back to one."""
