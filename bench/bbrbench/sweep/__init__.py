"""Sweeps: a scenario run over a grid of overrides with repetitions, aggregated to means and 95% CIs.

Directory layout:
    plan.json                     the base scenario, the points (overrides) and repetitions
    points/<id>/rep<k>/           one run directory per point and repetition; `done` marks it complete
    points/<id>/not_runnable.txt  why the point cannot run on this kernel
    sweep.json, sweep.csv         aggregated metrics; table.txt the console table, sweep.html the page

Rerunning with the same --out resumes: complete repetitions are kept, incomplete ones are redone, whichever
host ran them. The runs go through an executor: LocalExecutor here, one after another, or
cluster.DaskExecutor on a rack of test hosts; both leave the same layout. Each run directory holds
host.json, and repetitions from hosts whose kernels or algorithm objects differ are not pooled unless
mix_hosts says so.

The package's parts: plans (the points and their validation), store (what the directory holds, run by
run), execution (executors and the loop that runs what is pending), aggregation (means, tables, pooling
checks).
"""

from .aggregation import PAGE, aggregate, metric_value, repetitions_status, trust_failures
from .execution import Executor, LocalExecutor, Outcome, nominal_s, run_sweep
from .plans import Job, Plan, Point, load_plan, open_plan, plan_runs, point_id, point_raw
from .store import DONE_MARK, FAILED, NOT_RUNNABLE, done_runs, pending, runs_done

__all__ = ["DONE_MARK", "FAILED", "NOT_RUNNABLE", "PAGE", "Executor", "Job", "LocalExecutor", "Outcome", "Plan",
           "Point", "aggregate", "done_runs", "load_plan", "metric_value", "nominal_s", "open_plan", "pending",
           "plan_runs", "point_id", "point_raw", "repetitions_status", "run_sweep", "runs_done", "trust_failures"]
