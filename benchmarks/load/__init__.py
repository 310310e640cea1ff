"""Load through salt-api with locust: an operator console's traffic.

- :mod:`benchmarks.load.locustfile`: the user classes and the load shape
  (``locust -f benchmarks/load/locustfile.py``);
- :mod:`benchmarks.load.traffic`: task weights, think times, sizes, timeouts;
- :mod:`benchmarks.load.failures`: how a failed request is classified;
- :mod:`benchmarks.load.shape`: the ramp / steady / spike phases;
- :mod:`benchmarks.load.summary`: locust's CSVs to a Markdown report;
- :mod:`benchmarks.load.run`: stacks, locust processes, sampling, the report
  (``python -m benchmarks.load --help``).

The modules locust imports (locustfile, traffic, failures, shape) import neither the
harness nor Salt: a worker on another machine needs only locust and this
checkout.
"""
