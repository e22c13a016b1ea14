"""The bulk JSON codec: orjson's speed, the standard library's reach, the collector paused
while a batch is read and never left off."""

from __future__ import annotations

import gc
import json
import math
import threading

import pytest

from themisto_ext import json_codec


def test_what_orjson_refuses_to_read_is_read_as_python_writes_it():
    assert math.isnan(json_codec.loads(b'{"x": NaN}')["x"])
    assert json_codec.loads(f"[{2**70}]") == [2**70]
    assert json_codec.loads(b'"\\ud800"') == "\ud800"
    with pytest.raises(ValueError):
        json_codec.loads(b"{not json")


def test_what_orjson_refuses_to_write_is_written_and_reads_back():
    for value in ({"s": "a\ud800b"}, {"n": 2**70}):
        assert json.loads(json_codec.dumps(value)) == value
        assert json.loads(json_codec.dumps_text(value)) == value
    assert json_codec.dumps({"x": float("nan")}) == b'{"x":null}'  # JSON a browser can read
    assert json_codec.dumps_text({"é": "ü"}) == '{"é":"ü"}'


def test_bulk_pauses_the_collector_and_restores_it():
    assert gc.isenabled()
    with json_codec.bulk():
        assert not gc.isenabled()
        with json_codec.bulk():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer reader is still reading
    assert gc.isenabled()
    with pytest.raises(RuntimeError), json_codec.bulk():
        raise RuntimeError("a reader failed")
    assert gc.isenabled()


def test_bulk_leaves_off_a_collector_someone_else_turned_off():
    gc.disable()
    try:
        with json_codec.bulk():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_bulk_in_threads_turns_the_collector_on_after_the_last_reader():
    inside, release = threading.Barrier(3), threading.Event()

    def read() -> None:
        with json_codec.bulk():
            inside.wait(30)
            release.wait(30)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    inside.wait(30)
    assert not gc.isenabled()
    release.set()
    for t in readers:
        t.join(30)
    assert gc.isenabled()
