"""Storm benchmark: a burst of jobs to every minion, rate limiting off vs on.

One run, two masters started the same way, one after the other: ``off``
(no ``rate_limiting``) and ``on`` (``rate_limiting`` with Salt's defaults:
capacity criteria, 2000 master points, 10 jobs per minion). Both have the
same 4 MWorkers in all (the limiter-on master's exempt pool is one of
them). Each gets the
same fleet of simulated minions, which run at most ``max_minion_jobs`` jobs
at once (more wait on the minion) and count, from their own side, the most
jobs each ever had in flight.

Each master also runs an event consumer (``--consumer-rate``, 150 events/s
by default), standing for SUSE Manager: an engine that takes every event off
the master's bus into an unbounded queue in its memory and stores at most
that many per second in PostgreSQL, sampling its backlog and RSS once a
second. Its backlog over the storm, off vs on, shows the failure the limiter
exists for (:mod:`benchmarks.storm.consumer` says when it is bounded).

During the storm, once a second:

- master PSS, summed over the master's processes (shared pages divided
  among the processes that map them, not counted once each), the event
  consumer's engine and the harness's forwarding engine left out: the one
  stands for a system beside the master, the other is the benchmark's
  instrument (``accounting.beside_master``);
- event-bus delay: how old the job returns are when a bus subscriber (the
  harness's forwarding engine) gets them; a bus with a backlog delivers old
  events;
- jobs queued (the queue manager's own count) and in flight (published,
  returns still missing), returns per second seen on the bus;
- capacity held, from the queue manager's ledger: points in total (returns
  the master waits for) and the most points one minion holds;
- presence pings: ``test.ping`` to 10 minions every second, published
  from up to 10 pinger threads (each keeping one client for the run),
  timed until all 10 returns reached the master's bus (each return's
  ``_stamp``, read after the run off the harness's listener: no client
  waits on the bus during the storm). The headline is the share of ticks
  whose ping all 10 answered within its timeout (a skipped tick is a
  failure), then the p50/p99 of those answered pings only. Every tick
  pings 10 other minions, in a fixed shuffled order through the whole
  fleet: a minion sends its requests to the master one at a time over its
  one request channel, so pinging the same 10 minions every second would
  queue their own job returns behind their ping returns and measure that
  queue, not the master.

At the end: jobs accepted / rejected / expired / published, returns
expected (targets minus excluded minions; of a job still going out in
slices, the minions of its slices so far) against received (the master's
job cache, the ground truth), the highest number of jobs one minion had in
flight; the CPU of the master's processes (those two engines apart) and,
apart, of the storm's own process (the driver: pinger, submitters,
accounting).

Plus a micro-benchmark of one decision of the shipped criteria module,
loaded through Salt's loader.

Layout (one job per module)::

    options.py     StormOptions: every option and default, the CLI flags,
                   the reproduce line
    run.py         run(): the criteria micro-benchmark, one stack per variant,
                   the report
    variant.py     StormRun: one variant's threads and result, under one lock
    accounting.py  the workload, JobBook and the records: what is counted how
    decide.py      the criteria module micro-benchmark
    report.py      the Markdown report and its data file
    consumer.py    the event consumer's samples on the storm's clock; bounded?
    goals.py       the issue's goals, limiter on vs off, each with its verdict
                   and, when missed, by how much and the run's data on why
    plot.py        the timeline plot and the consumer's

.. code-block:: python

    from benchmarks import storm

    storm.run(storm.StormOptions(jobs=400, variants=("on",)))
"""

from benchmarks.storm.options import StormOptions
from benchmarks.storm.run import run

__all__ = ["StormOptions", "run"]
