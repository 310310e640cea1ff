"""Salt buffers early log records in a temporary stderr handler and flushes it
at interpreter exit, after pytest closed its capture streams; hand logging to
pytest instead so Salt's matcher errors show up in the captured log."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _no_salt_temp_log_handler():
    import salt._logging

    salt._logging.shutdown_temp_handler()
    yield
