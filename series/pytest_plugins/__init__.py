"""pytest plugins that run inside other projects' test processes (Salt's).

This directory is put on ``PYTHONPATH`` and its modules are loaded with
``-p NAME``; they import nothing from saltfleet, so they work in a virtualenv
that has only Salt installed.
"""
