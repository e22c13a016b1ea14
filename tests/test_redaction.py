import pytest

from themisto_ext.redaction import REDACTED, Redactor


@pytest.mark.parametrize("code", [
    "db_password = 'hunter2-secret'",
    "settings.api_key = 'hunter2-secret'",
    "config['auth_token'] = 'hunter2-secret'",
    "connect(host='x', password='hunter2-secret')",
    "creds = {'secret': 'hunter2-secret'}",
    "token: str = 'hunter2-secret'",
])
def test_literals_given_to_secret_names_are_masked_before_the_cell_runs(code):
    masked = Redactor().mask_code(code)
    assert "hunter2-secret" not in masked and REDACTED in masked


def test_ordinary_code_and_formats():
    r = Redactor()
    assert r.mask_code("name = 'alice'\nprint(name)") == "name = 'alice'\nprint(name)"
    assert r.mask("key sk-" + "a" * 30) == f"key {REDACTED}"
    assert r.mask_code("this is not python (") == "this is not python ("
    assert Redactor(enabled=False).mask_code("password = 'hunter2-secret'") \
        == "password = 'hunter2-secret'"


def test_known_literals_are_masked_everywhere():
    r = Redactor()
    assert r.learn(["s3cr3t-value"]) and not r.learn(["s3cr3t-value"])
    assert r.mask("echo s3cr3t-value twice s3cr3t-value") == f"echo {REDACTED} twice {REDACTED}"
