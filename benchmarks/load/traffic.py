"""The console's traffic model: task weights, think times, sizes and
timeouts of :mod:`benchmarks.load.locustfile`, each with the reason for it.

Here rather than in the locustfile so that the runner can quote them in its
report without importing locust (which monkey-patches its process).
"""

from __future__ import annotations

from typing import Final

PASSWORD_ENV: Final = "SALTFLEET_API_PASSWORD"

# -- think times ------------------------------------------------------------
#: an operator reads what the console shows for a few seconds, then clicks
CONSOLE_THINK_S: Final = (1.0, 5.0)
#: a live view reconnects a moment after its stream window ended
EVENTS_RECONNECT_S: Final = 2.0

# -- task weights (ConsoleUser) ----------------------------------------------
#: presence of the machines on screen is what a console checks most often
WEIGHT_PRESENCE: Final = 8
#: after starting a job, operators poll its result page
WEIGHT_JOB_LOOKUP: Final = 4
#: actions on a selected group (package inventory refresh) are routine
WEIGHT_JOB_GROUP: Final = 3
#: one machine's pillar page: the full pillar is compiled on the master
WEIGHT_PILLAR_ITEMS: Final = 2
#: one pillar value shown in a detail view: the minion's in-memory pillar
WEIGHT_PILLAR_GET: Final = 2
#: the load indicator in the console's header polls the rate limiter
WEIGHT_RUNNER: Final = 2
#: a job to every minion is rare: it is the heaviest thing a console does
WEIGHT_JOB_ALL: Final = 1

# -- sizes and timeouts -------------------------------------------------------
#: seconds a presence check waits for its minions (the ``local`` client)
PRESENCE_TIMEOUT_S: Final = 5
#: seconds a pillar read waits for its one minion
PILLAR_TIMEOUT_S: Final = 10
#: the HTTP client's own limit; longer than every Salt timeout above
HTTP_TIMEOUT_S: Final = 30.0
#: jobs a console user remembers for lookups (its recent-jobs list)
RECENT_JOBS: Final = 20
#: one /events window: at most this long, at most this many events
EVENTS_WINDOW_S: Final = 10.0
EVENTS_MAX: Final = 500
#: a pillar key every synthetic pillar has (harness.pillar.generate)
PILLAR_KEY: Final = "org"
