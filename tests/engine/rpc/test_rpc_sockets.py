"""HOST:PORT addresses as given to ``--tracker`` and to a job's ``measure.runner.tracker``."""

import pytest

from tunecli.engine.rpc.sockets import parse_host_port


def test_host_and_port() -> None:
    assert parse_host_port("localhost:9190") == ("localhost", 9190)
    assert parse_host_port(" 10.0.0.1:9190 ") == ("10.0.0.1", 9190)


def test_port_required_unless_defaulted() -> None:
    assert parse_host_port("trackerhost", default_port=9190) == ("trackerhost", 9190)
    with pytest.raises(ValueError, match="expected HOST:PORT"):
        parse_host_port("trackerhost")


@pytest.mark.parametrize("bad", [":9190", "host:0", "host:99999", "host:abc", "h:70000", "host:port"])
def test_bad_addresses(bad: str) -> None:
    with pytest.raises(ValueError, match=r"expected HOST:PORT \(e.g. 127.0.0.1:9190\), got"):
        parse_host_port(bad, default_port=9190)
