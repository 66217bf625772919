"""While models are called, no two threads parse Python at once (a crash of CPython 3.11's ast, found by
a tester: "SystemError: AST constructor recursion depth mismatch", when litellm formatted a failed call's
traceback on the model thread while pytest rewrote a module on the test thread)."""

from __future__ import annotations

import ast
import threading
import time

from pytest_researchqa.llm.engine import ModelRunner


def test_while_a_model_runner_lives_the_model_thread_and_the_test_thread_never_parse_at_once(monkeypatch):
    real = ast.parse
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []

    def watched_parse(*args, **kwargs):
        inside.append(threading.current_thread().name)
        if len(inside) > 1:
            overlaps.append(tuple(inside))
        time.sleep(0.002)  # a parse long enough for the other thread to come in, were it let
        inside.pop()
        return real(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", watched_parse)
    runner = ModelRunner()
    try:
        async def parse_on_the_model_thread() -> None:
            for _ in range(40):
                ast.parse("x = 1")

        done = runner.run(parse_on_the_model_thread)
        for _ in range(40):
            ast.parse("y = 2")
        done.result(timeout=30)
    finally:
        runner.close()
    assert overlaps == []
    assert ast.parse("z = 3").body, "parsing still works"
