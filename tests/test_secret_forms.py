"""Secrets, in every form the issue tried, reach no file the project writes and no prompt;
innocent names keep their values. A notebook recorded by ``themisto record`` (real kernel,
journal, store, export), then prompts built from the export by ``themisto prompt``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import themisto

# Each form: the cells that bring the secret in and show it, and the secret itself.
AWS_ID, AWS_SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
FORMS: dict[str, tuple[list[str], str]] = {
    "secret-named variable": (["password = 'form01-plainvar'", "password"], "form01-plainvar"),
    "credential format": (["print('key sk-' + 'F2' * 15)", "OPENAI = 'sk-' + 'F3' * 15"],
                          "F2" * 15),
    "printed secret variable": (["print('using', password)"], "form01-plainvar"),
    "literal in code": (["api_token = 'form04-codelit'"], "form04-codelit"),
    "dict key": (["cfg = {'api_key': 'form05-dictkey', 'host': 'db'}", "cfg"],
                 "form05-dictkey"),
    "DataFrame column": (["import pandas as pd\ndf = pd.read_csv('users.csv')", "df",
                          "print(df.to_string())"], "form06-column"),
    "os.environ copy": (["import os\nos.environ['DB_PASSWORD'] = 'form07-environ'",
                         "env = dict(os.environ)", "env"], "form07-environ"),
    "db_pass": (["db_pass = 'form08-dbpass'", "print(db_pass)"], "form08-dbpass"),
    "keyword argument in a traceback": (
        ["def connect(host, password):\n    raise ConnectionError(f'no route to {host}')",
         "connect('db.local', password='form09-kwarg')"], "form09-kwarg"),
    "dataclass field": (
        ["from dataclasses import dataclass\n@dataclass\nclass Config:\n    user: str\n"
         "    password: str",
         "c1 = Config(user='ann', password='form10-dataclass')",
         "c2 = Config('bob', open('pw10.txt').read().strip())", "print(c1, c2)"],
        "form10-dataclass"),
    "list of dicts": (["items = [{'token': 'form11-listdict', 'n': 1}]", "items"],
                      "form11-listdict"),
    "copy after the name is deleted": (
        ["api_secret = 'form12-deleted'", "backup = api_secret\ndel api_secret",
         "print(backup)", "backup"], "form12-deleted"),
    "keyword text": (["print('password=form13-kwtext')"], "form13-kwtext"),
    "JSON text": (["print('{\"token\": \"form14-json\"}')"], "form14-json"),
    "Authorization header": (["print('Authorization: Bearer form15-bearer-abcdef')"],
                             "form15-bearer-abcdef"),
    "AWS key pair": ([f"print('{AWS_ID},{AWS_SECRET}')"], AWS_SECRET),
}
# The second dataclass's password comes from a file, never from code.
EXTRA_SECRETS = ["form10-positional"]
INNOCENT = {
    "author": "Jane Austen", "tokens": "tokenised-words", "tokenizer": "whitespace-split",
    "max_tokens": "256", "passengers": "Ann Smith", "bypass": "no-bypass-route",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], Path]:
    tmp = tmp_path_factory.mktemp("secrets")
    (tmp / "users.csv").write_text("user,password\nann,form06-column\nbob,form06-other\n")
    (tmp / "pw10.txt").write_text("form10-positional\n")
    cells = [c for cells, _ in FORMS.values() for c in cells]
    cells += [f"{name} = {value!r}" if name != "max_tokens" else f"{name} = {value}"
              for name, value in INNOCENT.items()]
    cells.append("print(author, tokens, tokenizer, max_tokens, passengers, bypass)")
    nb = tmp / "forms.ipynb"
    nb.write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                   "execution_count": None} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    out = tmp / "export.jsonl"
    r = themisto("record", str(nb), "--out", str(out), store=tmp / "data" / "store.sqlite3")
    assert r.returncode == 0, r.stderr
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(steps) == len(cells)
    prompts = tmp / "prompts.txt"
    with prompts.open("w") as fh:
        for task in ("output", "next-cell"):
            for context in ("none", "full", "curated"):
                p = themisto("prompt", str(out), "--step", str(len(cells)), "--task", task,
                             "--context", context)
                assert p.returncode == 0, p.stderr
                fh.write(p.stdout)
    return tmp, steps, prompts


def written_files(tmp: Path) -> list[Path]:
    return [p for p in tmp.rglob("*") if p.is_file() and p.suffix != ".ipynb"
            and p.name not in ("users.csv", "pw10.txt")]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_secret_form_reaches_no_file_and_no_prompt(recorded: tuple[Path, list[dict], Path],
                                                   form: str):
    tmp, _, _ = recorded
    secret = FORMS[form][1]
    files = written_files(tmp)
    assert {p.suffix for p in files} >= {".sqlite3", ".jsonl", ".txt"}  # store, journal...
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"{form}: {secret} in {path.name}"


def test_a_secret_read_from_a_file_into_a_field_is_masked(
        recorded: tuple[Path, list[dict], Path]):
    tmp, _, _ = recorded
    for path in written_files(tmp):
        for secret in EXTRA_SECRETS:
            assert secret.encode() not in path.read_bytes(), path.name


def test_innocent_names_keep_their_values(recorded: tuple[Path, list[dict], Path]):
    _, steps, prompts = recorded
    variables = steps[-1]["runtime_variables"]
    for name, value in INNOCENT.items():
        assert variables[name]["repr"] != "<redacted>", name
        assert value in variables[name]["repr"], name
    assert steps[-1]["output"] == ("Jane Austen tokenised-words whitespace-split 256 Ann Smith "
                                   "no-bypass-route\n")
    assert "Jane Austen" in prompts.read_text()


def test_masked_steps_still_say_what_happened(recorded: tuple[Path, list[dict], Path]):
    _, steps, _ = recorded
    by_code = {s["code"]: s for s in steps}
    failing = next(s for s in steps if s["code"].startswith("connect('db.local'"))
    assert failing["error"]["ename"] == "ConnectionError"
    assert "no route to db.local" in failing["output"]
    assert by_code["print(backup)"]["output"] == "<redacted>\n"
    assert by_code["db_pass = '<redacted>'"]["runtime_variables"]["db_pass"]["repr"] \
        == "<redacted>"
