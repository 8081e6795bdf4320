"""nc_rq_jobs.py - the job function the RQ worker of tests/integration/test_frameworks.py runs (the
worker imports it by name: the test puts this folder on the worker's PYTHONPATH).

Runs in the RQ worker process (its work horse); no state of its own.
"""
from rq import get_current_job


def square(n, runs_key):
    """n * n; counts the run in the hash runs_key (field n), through the worker's own redis
    connection (the proxy), so the test sees each job ran exactly once whatever RQ's bookkeeping
    says."""
    get_current_job().connection.hincrby(runs_key, str(n), 1)
    return n * n
