# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore view` of a file it cannot open ends with an error before any
server starts (docs/conventions.md)."""

import socket

from warmcore import server


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_missing_or_foreign_file_is_an_error_before_serving(tmp_path, capsys, monkeypatch):
    # A server that started would block: fail at once instead of hanging.
    import bokeh.server.server as bs

    def no_server(*a, **k):
        raise AssertionError("a server was started")

    monkeypatch.setattr(bs, "Server", no_server)
    bad = tmp_path / "random.wct"
    bad.write_bytes(bytes(range(256)) * 4)
    for path in [tmp_path / "missing.wct", bad]:
        assert server.serve(str(path), _free_port()) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err, err
