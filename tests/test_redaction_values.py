"""Redaction follows values, matches names on words, and runs in linear time."""

from __future__ import annotations

import gc
import os
import time
from collections import deque, namedtuple
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import pytest

from themisto_ext.contract import DEFAULT_VALUE_PATTERNS
from themisto_ext.kernel.secret_values import ROWS, environment_secrets, secret_strings
from themisto_ext.redaction import REDACTED, Redactor

SECRET_NAMES = ["db_pass", "pwd", "api_key", "auth_token", "authorization", "password",
                "DB_PASSWORD", "OPENAI_API_KEY", "apiKey", "dbPassword", "X-Auth-Token",
                "client_secret", "TOKEN", "hf_token", "aws_secret_access_key", "privateKey",
                "passwd", "credentials", "Authorization", "self.password"]
INNOCENT_NAMES = ["author", "tokens", "tokenizer", "max_tokens", "passengers", "bypass",
                  "authors", "token_ids", "num_tokens", "key", "keys", "sort_key", "monkey",
                  "keyboard", "passage", "compass", "secretary", "pass_rate", "primary_key"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_names(name: str):
    assert Redactor().name_is_secret(name)


@pytest.mark.parametrize("name", INNOCENT_NAMES)
def test_innocent_names_are_not_secret(name: str):
    assert not Redactor().name_is_secret(name)


@pytest.mark.parametrize("text, secret", [
    ("connecting with password=hunter2-secret now", "hunter2-secret"),
    ('{"token": "tok-1234567", "user": "bob"}', "tok-1234567"),
    ("{'api_key': 'abc123xyz'}", "abc123xyz"),
    ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz'", "dXNlcjpwYXNz"),
    ("DB_PASSWORD=s3cr3t!x", "s3cr3t!x"),
    ("Config(user='u', password='v-dataclass-1')", "v-dataclass-1"),
    ("postgresql://scott:tiger-pw@db.example.com/prod", "tiger-pw"),
    ("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("key_id,secret\nAKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nMIIEow\n"
     "-----END RSA PRIVATE KEY-----", "MIIEow"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN (cut short)", "MIIEvQIBADAN"),
    ("restricted key rk_prod_51OuEMLAlTWGaDypq4P5", "51OuEMLAlTWGaDypq4P5"),
    ("BlobEndpoint=https://x.blob.core.windows.net/;SharedAccessSignature=sv2019abcdef;",
     "sv2019abcdef"),
    ("https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&se=2026-12-31T00:00Z"
     "&sig=Xq7mW2pLk9Rt4vBn8cZs1Yd6Fh3Gj5Ke0Ua2Ii4Oo6P%3D", "Xq7mW2pLk9Rt4vBn8cZs1Yd6Fh3Gj5"),
])
def test_keyword_text_and_formats_are_masked(text: str, secret: str):
    masked = Redactor().mask(text)
    assert secret not in masked and REDACTED in masked


@pytest.mark.parametrize("text", [
    "author='Jane Austen' tokens=5 max_tokens=256 passengers: 891",
    "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 by AKIAIOSFODNN7EXAMPLE",
    "def f(password: str = None) -> bool:",
])
def test_ordinary_text_is_kept(text: str):
    masked = Redactor().mask(text)
    assert masked.replace(REDACTED, "") in text
    assert "Jane Austen" in Redactor().mask(text) or "Jane" not in text
    if "commit" in text:
        assert "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12" in masked


@pytest.mark.parametrize("code", [
    "token = os.environ['TOKEN']", "password = getpass()", "connect(api_key=API_KEY)",
    "print(f'password={pw}')", "password = pw.strip()",
])
def test_in_code_keyword_values_that_are_code_are_kept(code: str):
    assert Redactor().mask(code, code=True) == code


def test_in_code_keyword_values_are_masked():
    r = Redactor()
    assert r.mask("connect(password='pw-123456')", code=True) == "connect(password='<redacted>')"
    assert r.mask("print('password=pw-123456')", code=True) == "print('password=<redacted>')"


def test_known_secrets_persist_and_are_masked_everywhere():
    r = Redactor()
    r.learn_from_code("cfg = {'api_key': 'k-live-998877'}\nconnect(password='pw-5544332')")
    for secret in ("k-live-998877", "pw-5544332"):
        assert r.mask(f"Traceback ... connect(x, {secret})") == \
            f"Traceback ... connect(x, {REDACTED})"
    assert not r.learn(["short", "password"])  # too short to hunt; a label, not a secret


@dataclass
class Config:
    user: str
    password: str


Account = namedtuple("Account", "user token")


class Slotted:
    __slots__ = ("api_key", "name")

    def __init__(self) -> None:
        self.name, self.api_key = "slotted", "slot-key-8877"


def found(name: str, value: object) -> set[str]:
    return set(secret_strings(name, value, Redactor().name_is_secret))


def test_values_under_secret_names_are_found():
    assert found("cfg", {"api_key": "k-1234567", "host": "db"}) == {"k-1234567"}
    assert found("rows", [{"token": "t-1234567", "n": 1}, {"token": "t-7654321"}]) \
        == {"t-1234567", "t-7654321"}
    assert found("c", Config("bob", "pw-dataclass")) == {"pw-dataclass"}
    assert found("a", Account("bob", "tok-namedtuple")) == {"tok-namedtuple"}
    assert found("s", Slotted()) == {"slot-key-8877"}
    assert found("env", {"DB_PASSWORD": "pw-environ", "HOME": "/root"}) == {"pw-environ"}
    assert found("db_pass", "pw-variable") == {"pw-variable"}
    assert found("credentials", {"user": "bob-the-user", "nested": ["deep-value"]}) \
        == {"bob-the-user", "deep-value"}
    frame = pd.DataFrame({"user": ["ann", "bob"], "password": ["pw-frame-1", "pw-frame-2"]})
    assert found("df", frame) == {"pw-frame-1", "pw-frame-2"}
    assert found("s", pd.Series(["pw-series"], name="password")) == {"pw-series"}
    assert found("author", "Jane Austen") == set()
    assert found("tokens", ["the", "tokenizer-output"]) == set()


def test_value_search_reads_only_the_ends_of_a_large_frame():
    n = 1_000_000
    frame = pd.DataFrame({"password": [f"pw-{i:07d}" for i in range(n)]})
    values = found("df", frame)
    assert len(values) == 2 * ROWS
    assert "pw-0000000" in values and f"pw-{n - 1:07d}" in values
    assert f"pw-{n // 2:07d}" not in values  # documented: the middle is not walked


def test_value_search_never_runs_user_code():
    class Hostile(list):
        def __iter__(self):
            raise AssertionError("user code ran")

        def __getattribute__(self, name):
            raise AssertionError("user code ran")

    assert found("password_list", Hostile(["pw-in-hostile"])) == {"pw-in-hostile"}


def test_environment_variables_under_secret_names(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVICE_API_KEY", "env-api-key-42")
    monkeypatch.setenv("EDITOR", "vim-editor")
    monkeypatch.setenv("PWD", "/home/someone/project")  # "pwd", but the working directory
    values = set(environment_secrets(Redactor().name_is_secret))
    assert "env-api-key-42" in values and "vim-editor" not in values
    assert "/home/someone/project" not in values
    assert os.environ["SERVICE_API_KEY"] == "env-api-key-42"


# ---------------------------------------------------------------- linear time
#
# Each pattern against inputs built to make a backtracking engine revisit text: time(4n)
# over time(n) is about 4 for linear work and 16 for quadratic work.

ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "sk-": lambda n: "sk-" * n + "!",
    "(?<![A-Za-z0-9_])[sr]k_": lambda n: "sk_live_" * n + "!",
    "machine": lambda n: ("machine " + "h" * 200 + " login " + "u" * 200 + " ") * (n // 400),
    "gh[pousr]_": lambda n: ("ghp_" + "a" * 29 + " ") * (n // 8),
    "github_pat_": lambda n: "github_pat_" * n,
    "(?:AKIA|ASIA)": lambda n: "AKIA" * n,
    "xox[abposr]-": lambda n: "xoxb-" * n + "!",
    "AIza": lambda n: "AIza" * n,
    "hf_": lambda n: ("hf_" + "a" * 29 + "!") * (n // 8),
    "glpat-": lambda n: "glpat-" * n + "!",
    "eyJ": lambda n: "eyJ" * n + ".x",
    "-----BEGIN": lambda n: "-----BEGIN PRIVATE KEY-----\n" * (n // 8),
    "Bearer": lambda n: "Bearer Bearer " * (n // 4),
    "://": lambda n: "://a:" * n,
    "sig=": lambda n: ("&sig=" + "a" * 29 + "!") * (n // 8) + "sig=" * n,
}


def ratio(run: Callable[[str], object], make: Callable[[int], str], n: int = 20_000) -> float:
    """time(4n) / time(n) per call, each the least of five measurements of enough calls
    to last 10 ms (texts of 0.1-1 MB: larger ones add cache effects to the ratio); other
    work on the machine only ever adds time, so the least is the closest."""
    def per_call(text: str, calls: int) -> float:
        times = []
        gc.disable()  # collections triggered by allocation counts are not the regex's cost
        try:
            for _ in range(5):
                start = time.perf_counter()
                for _ in range(calls):
                    run(text)
                times.append((time.perf_counter() - start) / calls)
        finally:
            gc.enable()
        return min(times)

    small, large = make(n), make(4 * n)
    calls = 1
    while per_call(small, 1) * calls < 0.01 and calls < 10_000:
        calls *= 2
    tries = []
    for _ in range(3):
        tries.append(per_call(large, max(1, calls // 4)) / per_call(small, calls))
        if tries[-1] < LINEAR:
            break
    return min(tries)


LINEAR = 8.0  # time(4n)/time(n): ~4 for linear work, ~16 for quadratic


def test_every_default_pattern_has_an_adversarial_input():
    for pattern in DEFAULT_VALUE_PATTERNS:
        assert any(pattern.startswith(key) for key in ADVERSARIAL), pattern


@pytest.mark.parametrize("pattern", DEFAULT_VALUE_PATTERNS)
def test_each_value_pattern_runs_in_linear_time(pattern: str):
    import re

    compiled = re.compile(pattern)
    (make,) = [m for key, m in ADVERSARIAL.items() if pattern.startswith(key)]
    assert ratio(lambda text: deque(compiled.finditer(text), maxlen=0), make) < LINEAR


@pytest.mark.parametrize("make", [
    lambda n: "password=" * n,                      # names and separators only
    lambda n: "password='" + "x" * n,               # a quoted value that never closes
    lambda n: "a." * n + "=",                       # one long dotted name
    lambda n: "token: " + "password=" * n,
    lambda n: "AKIAIOSFODNN7EXAMPLE " * (n // 8),   # key ids, no secret keys
    lambda n: ("AKIAIOSFODNN7EXAMPLE " + "a" * 39 + " ") * (n // 16),
    lambda n: "A" * n + "b",                        # word splitting of one long name
    lambda n: "pw-known-1 " * (n // 4),             # known secrets
])
def test_masking_runs_in_linear_time(make: Callable[[int], str]):
    r = Redactor()
    r.learn([f"pw-known-{i}" for i in range(2000)])
    assert ratio(r.mask, make) < LINEAR
    assert ratio(lambda text: r.mask(text, code=True), make) < LINEAR


def test_names_in_huge_keys_are_not_words():
    r = Redactor()
    assert not r.name_is_secret("password" * 1000)  # data, not a name


@pytest.mark.parametrize("text", [
    "task-0123456789abcdefghij done", "the desk-abcdefghijklmnop1234 booking",
    "Bearer authentication is described in RFC 6750", "token: a unit of text",
    "Authorization: required for admin pages",
    "https://example.com/find?q=signal&sig=high&page=2", "p < 0.05: sig=True",
])
def test_key_patterns_inside_words_and_prose_are_kept(text: str):
    assert Redactor().mask(text) == text


@pytest.mark.parametrize("name", ["PGPASSWORD", "authtoken", "db_pw", "passcode", "AccountKey",
                                  "MYSQLPASSWD"])
def test_run_together_and_short_secret_names(name: str):
    assert Redactor().name_is_secret(name)


def test_a_large_namespace_is_cut_into_words_once(monkeypatch: pytest.MonkeyPatch):
    import themisto_ext.redaction as redaction

    r = Redactor()
    names = [f"n{i}" for i in range(200_000)] + [f"db_pass_{i}" for i in range(1_000)]
    assert sum(map(r.name_is_secret, names)) == 1_000
    cut: list[str] = []
    real = redaction.name_words
    monkeypatch.setattr(redaction, "name_words", lambda name: cut.append(name) or real(name))
    assert sum(map(r.name_is_secret, names)) == 1_000
    assert cut == []  # at 100,000 cached verdicts the cache emptied every cell (+2 s a cell)
