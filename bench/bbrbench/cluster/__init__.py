"""Sweeps over a rack of test hosts on Dask distributed: one scheduler, one worker per host (a lock), each
with one `testbed` resource. The client checks each worker as it joins and places every run itself,
spreading each point's repetitions over the hosts (docs/cluster.md).

Dask treats every peer it has authenticated as trusted: any member (a user's certificate or a host's)
can run code in every other member, as root on the test hosts. The certificates are for transport and
membership only, so one Dask cluster is one lab's trust domain; a lab whose members must not be root on
each other's hosts uses Slurm (slurm.py). Within that model the client still checks what comes back, so
that a broken or misconfigured host loses runs instead of corrupting a sweep.

The modules: certs (the authority and the TLS settings), servers (scheduler and worker processes),
worker (what runs on a test host), archive (a run directory packed and unpacked), replies (what the
client accepts from a worker), client (the executor a sweep runs on).
"""

from .certs import CRL_FILE, expiry, init_ca, issue, revoke
from .client import DaskExecutor, run_timeout_s
from .servers import serve_scheduler, serve_worker, start_commands

__all__ = ["CRL_FILE", "DaskExecutor", "expiry", "init_ca", "issue", "revoke", "run_timeout_s", "serve_scheduler",
           "serve_worker", "start_commands"]
