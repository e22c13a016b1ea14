"""What the server, the kernel hook and headless recording agree on, in one place.

The server launches kernels (``server/provisioner.py``), ``themisto record`` launches one
too (``replay.py``), and the hook inside the kernel (``kernel/``) must find where to write
and what to capture without reading the server's configuration. They agree through the
names and formats below: environment variables set at launch, the autoload argument, the
capture settings (one JSON environment variable), the per-kernel switch file, the
per-kernel status file (the kernel's report of whether it can write what it records),
file names derived from kernel ids, and the records of the journal (one typed class per
``kind``, one encoder and one decoder). Nothing here imports another part of the package
at import time, so the kernel can import it cheaply.
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from jupyter_core.paths import jupyter_data_dir

if TYPE_CHECKING:
    from themisto_ext.records import Step

# ---------------------------------------------------------------- JSON the user cannot patch


class _Encoder(json.JSONEncoder):
    """``json``'s encoder with its methods copied when themisto is imported, which in a
    recording kernel is before any user code: a user's ``json.dumps = partial(json.dumps,
    indent=1)`` (or a patched ``JSONEncoder.encode``) broke journal lines into several and
    lost 3 steps of 4. Everything the kernel side writes or reads as JSON goes through
    ``dumps`` and ``loads`` below."""

    encode = json.JSONEncoder.encode
    iterencode = json.JSONEncoder.iterencode


_COMPACT = _Encoder(ensure_ascii=False, separators=(",", ":"), default=str)
_PLAIN = _Encoder()
_DECODE = json.JSONDecoder().decode


def dumps(value: Any, compact: bool = True) -> str:
    """One line of JSON (``compact``: no spaces, non-ASCII kept, unknown values as str)."""
    return (_COMPACT if compact else _PLAIN).encode(value)


def loads(text: str | bytes) -> Any:
    return _DECODE(text.decode("utf-8") if isinstance(text, bytes) else text)


# ---------------------------------------------------------------- launch

JOURNAL_DIR_ENV = "THEMISTO_JOURNAL_DIR"
"""Where the kernel appends its journal (set by whoever launches a recording kernel)."""
STORE_PATH_ENV = "THEMISTO_STORE_PATH"
"""Overrides the default store for the CLI and the server."""
KERNEL_ID_ENV = "THEMISTO_KERNEL_ID"
"""The Jupyter kernel id, so the journal is named after the kernel."""
NOTEBOOK_ENV = "THEMISTO_NOTEBOOK_PATH"
"""The notebook the kernel runs, as the server names it."""
CAPTURE_ENV = "THEMISTO_CAPTURE"
"""The capture settings as JSON (``CaptureSettings.to_env``)."""
STORE_PASSWORD_ENV = "THEMISTO_STORE_PASSWORD"
"""The store's password as a hub's spawn hook hands it to a user's server, which takes
it out of its environment at start."""
SERVER_CREDENTIALS = ("PGPASSWORD", "PGPASSFILE", STORE_PASSWORD_ENV)
"""The server's database credentials: never in a kernel's environment."""
AUTOLOAD_ARG = "--IPKernelApp.extra_extensions=themisto_ext"
"""Added to an ipykernel command line: loads the hook without replacing the user's
``extensions``."""


SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|^PG|AUTH", re.IGNORECASE)
"""Environment variables a child process of the server's own code (the model process, the
rules' worker) does not inherit: it needs none of them."""


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Python child that runs this package (``python -m
    themisto_ext....``): ``base`` (the process's) without any variable that looks secret,
    and the folder this package was imported from first on PYTHONPATH, so the child runs
    the same code as its parent wherever that came from."""
    base = os.environ if base is None else base
    env = {name: value for name, value in base.items() if not SECRET_NAME.search(name)}
    package_root = str(Path(__file__).resolve().parents[1])  # holds themisto_ext/
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, base.get("PYTHONPATH", "")) if p)
    return env


def launch_env(
    base: Mapping[str, str],
    journal_dir: Path | str,
    kernel_id: str,
    notebook_path: str | None,
    settings: CaptureSettings,
) -> dict[str, str]:
    """``base`` plus what a kernel started with ``AUTOLOAD_ARG`` needs to record, minus
    the server's database credentials (user code runs in the kernel)."""
    env = {name: value for name, value in base.items() if name not in SERVER_CREDENTIALS}
    env[JOURNAL_DIR_ENV] = str(journal_dir)
    env[KERNEL_ID_ENV] = kernel_id
    env[CAPTURE_ENV] = settings.to_env()
    if notebook_path:
        env[NOTEBOOK_ENV] = notebook_path
    else:
        env.pop(NOTEBOOK_ENV, None)
    return env


# ---------------------------------------------------------------- capture settings

DEFAULT_NAME_PATTERNS: tuple[str, ...] = (
    "*_password_*", "*_passwords_*", "*_passwd_*", "*_passphrase_*", "*_pwd_*", "*_pass",
    "*_secret_*", "*_secrets_*", "*_credential_*", "*_credentials_*",
    "*_auth_*", "*_authorization_*", "*_token", "*_bearer_*",
    "*_apikey_*", "*_api_key_*", "*_access_key", "*_private_key_*", "*_privkey_*",
    "*_signing_key", "*_encryption_key", "*_passcode_*", "*_pw", "*_account_key",
    "*_access_signature",  # Azure connection strings (as detect-secrets' Azure plugin)
)
"""Secret-looking names, matched on WORDS (``redaction.py``): a name is cut into
lower-case words at ``_``, ``-``, ``.``, spaces, digits and camelCase humps
(``dbPassword`` -> ``db password``, ``OPENAI_API_KEY`` -> ``openai api key``); a pattern is
words joined by ``_``, where a ``*`` word stands for any number of words (none included)
and ``*``/``?`` inside a word are globs within that word; it must match all the name's
words. So ``*_token`` is any name whose last word is ``token`` (``TOKEN``, ``auth_token``,
``hfToken``) but not ``tokens``, ``tokenizer``, ``max_tokens`` or ``token_ids``."""

DEFAULT_VALUE_PATTERNS: tuple[str, ...] = (
    # Each runs in linear time (tests/test_redaction_values.py quadruples adversarial
    # inputs): a match starts at a literal (which the regex engine finds at memchr speed;
    # a boundary check comes after it, as a lookbehind), runs are single character
    # classes, and nothing can restart inside a run it already failed on. A group named
    # ``secret`` is what gets masked, else the whole match.
    r"sk-(?<![A-Za-z0-9]sk-)[A-Za-z0-9_\-]{16,}",  # OpenAI / Anthropic style keys (not
    # inside a word: "task-...", "desk-..." are not keys)
    # Stripe secret and restricted keys (as gitleaks' stripe-access-token rule)
    r"(?<![A-Za-z0-9_])[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",
    r"gh[pousr]_[A-Za-z0-9]{30,}",                  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{22,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",                   # AWS access key ids
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",              # Slack
    r"AIza[0-9A-Za-z_\-]{35}",                      # Google API keys
    r"hf_[A-Za-z0-9]{30,}",                         # Hugging Face
    r"glpat-[A-Za-z0-9_\-]{20,}",                   # GitLab
    r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"  # JWT
    r"\.[A-Za-z0-9_\-]{10,}",
    # A PEM private key, also one cut short: from its BEGIN line to its END line or to the
    # next run of five dashes, at most 8 KiB (an RSA-8192 key is 6.5 KiB).
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----(?:[^-]|-(?!----)){0,8192}"
    r"(?:-----END [A-Z ]{0,40}PRIVATE KEY-----)?",
    # HTTP bearer credentials: with a digit or a symbol ("Bearer authentication" is prose)
    r"Bearer(?<![A-Za-z0-9_]Bearer)[ \t]+(?=[A-Za-z]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{8,}=*",
    # .netrc entries: "machine HOST [login USER] password SECRET", on one line or several
    r"machine[ \t]+\S{1,256}(?:\s{1,64}login[ \t]+\S{1,256})?\s{1,64}password[ \t]+"
    r"(?P<secret>\S{1,256})",
    r"://(?P<secret>[^\s/:@]{0,256}:[^\s/@]{1,256})@",  # user:password@ in URLs
    # Azure shared access signatures: the URL-encoded HMAC of a query's sig= (a SAS URL,
    # a connection string's SharedAccessSignature); a short sig=high is not one
    r"sig=(?<=[?&;]sig=)(?P<secret>[A-Za-z0-9%+/]{30,}=*)",
)
"""Credential formats masked wherever they appear (code, outputs, reprs)."""


@dataclass
class CaptureSettings:
    """What the kernel hook records and within which budgets (the server's traitlets of
    the same names set them; these are the defaults everywhere)."""

    recording: bool = True
    level: str = "code+outputs+state"
    """What a step holds (``CAPTURE_LEVELS``): below the full level the hook neither takes
    the runtime snapshot nor traces, and ``within_level`` empties the fields not captured
    (at ``code``, outputs too) before the step is written."""
    repr_length: int = 1000
    cell_budget: float = 0.1
    """Seconds the runtime snapshot may take per cell; the rest is deferred to later cells."""
    value_budget: float = 0.05
    """Seconds one value's repr/size may take before it gets a placeholder."""
    max_variables: int = 5000
    output_length: int = 200_000
    """Characters of output kept per step: ``output`` and the texts of ``outputs`` together
    each hold at most this many (the middle of longer output is elided); so does an error's
    traceback."""
    code_length: int = 200_000
    """Characters of a cell's code kept (head and tail)."""
    output_items: int = 1_000
    """Outputs kept per step (the first two thirds and the last third of longer lists)."""
    step_bytes: int = 4 * 1024 * 1024
    """Largest journal line of a step, in bytes of UTF-8 JSON: far below the 16 MiB a
    journal reader takes at once. A step that would be larger has all its text limits
    halved until it fits."""
    redact: bool = True
    trace: bool = False
    """Trace every cell line by line (``themisto record --trace``; one cell:
    ``%%themisto_trace``). Off, the tracer is never installed."""
    name_patterns: list[str] = field(default_factory=lambda: list(DEFAULT_NAME_PATTERNS))
    value_patterns: list[str] = field(default_factory=lambda: list(DEFAULT_VALUE_PATTERNS))

    def to_env(self) -> str:
        return dumps(asdict(self), compact=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CaptureSettings:
        """The settings a launcher passed, else the defaults (a bad value is ignored: the
        kernel must start whatever its environment says)."""
        raw = (environ if environ is not None else os.environ).get(CAPTURE_ENV)
        if not raw:
            return cls()
        try:
            data = loads(raw)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        defaults = cls()
        known: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in data and isinstance(data[f.name], type(getattr(defaults, f.name))):
                known[f.name] = data[f.name]
        return cls(**known)


# ---------------------------------------------------------------- capture levels

CAPTURE_LEVELS = ("code", "code+outputs", "code+outputs+state")
"""What an administrator lets the hook record, least first: code and timing only; with
what the cells showed (outputs and errors); with the runtime state (variables, the state
hash, memory, traces)."""
EMPTY_STATE_HASH = "0" * 16
"""``hash_index`` of a step whose state was not captured."""


def captures_outputs(level: str) -> bool:
    return level != "code"


def captures_state(level: str) -> bool:
    """Unknown levels capture the least: a typo must not record more than was meant."""
    return level == CAPTURE_LEVELS[-1]


def within_level(step: dict[str, Any], level: str) -> dict[str, Any]:
    """``step`` without what ``level`` does not capture (a copy; the step itself if it
    loses nothing). The kernel applies it before writing, the server again at ingest."""
    if captures_state(level):
        return step
    step = dict(step, runtime_variables={}, hash_index=EMPTY_STATE_HASH, memory_bytes=None)
    step.pop("trace", None)
    if not captures_outputs(level):
        step.update(output="", outputs=[], error=None)
    return step


# ---------------------------------------------------------------- locations


def default_home() -> Path:
    return Path(jupyter_data_dir()) / "themisto"


def default_store_path() -> Path:
    env = os.environ.get(STORE_PATH_ENV)
    return Path(env) if env else default_home() / "trajectories.sqlite3"


def default_user() -> str:
    """Who records: the JupyterHub user when running under a hub, else the login name."""
    hub_user = os.environ.get("JUPYTERHUB_USER")
    if hub_user:
        return hub_user
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return str(os.getuid())


def journal_dir_for(store_path: Path) -> Path:
    """Journals live beside the store they feed, so one store never ingests another's kernels."""
    return store_path.parent / "journal"


def default_journal_dir() -> Path:
    env = os.environ.get(JOURNAL_DIR_ENV)
    return Path(env) if env else default_home() / "journal"


PANDAS_DISPLAY: tuple[Any, ...] = (
    "display.max_rows", 10, "display.min_rows", 10, "display.max_columns", 12,
    "display.width", 120, "display.max_colwidth", 40)
"""``pandas.option_context`` arguments with which the kernel writes a pandas object's repr
into the snapshot, and with which the baseline shows a rebuilt one to check it against that
text (``rules/frames.py``). A longer object shows 10 rows: its 5 first and
last, what ``head()`` and ``tail()`` show."""

DATA_ELEMENTS = 1_000
"""Most values an array, Series or DataFrame may hold for the snapshot to keep it as data
(``kernel/values.py``) beside its repr: the rules then compute on the very object."""

MAX_NAME = 100
"""Longest kernel-derived file name part: far below every file system's 255 bytes."""


def file_safe(kernel_id: str) -> str:
    """A kernel id as a file name part: only ``[A-Za-z0-9._-]``, at most ``MAX_NAME``
    characters; ids that had to be changed get a digest so that they stay distinct."""
    safe = "".join(c for c in kernel_id if (c.isalnum() and c.isascii()) or c in "-_.")
    safe = safe.lstrip(".")
    if safe == kernel_id and 0 < len(safe) <= MAX_NAME:
        return safe
    digest = hashlib.blake2b(kernel_id.encode("utf-8", "surrogatepass"),
                             digest_size=8).hexdigest()
    return f"{safe[:MAX_NAME - 17]}-{digest}"


# ---------------------------------------------------------------- the per-kernel switch


def switch_path(journal_dir: Path, kernel_id: str) -> Path:
    """The file through which the server switches one kernel's recording on or off."""
    return journal_dir / "control" / f"{file_safe(kernel_id)}.json"


def read_switch(path: Path) -> bool | None:
    """The switch's position, or None when there is none (or it cannot be read)."""
    try:
        data = loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("recording") if isinstance(data, dict) else None
    return value if isinstance(value, bool) else None


def write_switch(path: Path, on: bool) -> None:
    """Write the switch atomically: the kernel never reads a half-written file."""
    _write_atomically(path, {"recording": on})


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(dumps(data, compact=False), "utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------- the per-kernel status


@dataclass(frozen=True)
class RecordingStatus:
    """Whether a kernel's hook can write what it records, as it last found out.

    The kernel writes it when it changes (a journal it cannot create or write, and when it
    can again); the server reads it to tell the user. ``ok`` false with a ``reason`` means
    steps are not reaching the journal: they wait in the kernel's memory (``pending``
    records, bounded) and are written, in order, once the journal can be written again.
    """

    ok: bool
    reason: str | None = None
    trajectory_id: str | None = None
    pending: int = 0
    at: str = ""


def status_path(journal_dir: Path, kernel_id: str) -> Path:
    """The file in which a kernel reports its recording status (beside its switch)."""
    return journal_dir / "control" / f"{file_safe(kernel_id)}.status.json"


def read_status(path: Path) -> RecordingStatus | None:
    """The status a kernel reported, or None when there is none (or it cannot be read)."""
    try:
        data = loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    reason, tid, pending, at = (data.get(k) for k in ("reason", "trajectory_id", "pending", "at"))
    return RecordingStatus(
        ok=data["ok"], reason=reason if isinstance(reason, str) else None,
        trajectory_id=tid if isinstance(tid, str) else None,
        pending=pending if isinstance(pending, int) else 0, at=at if isinstance(at, str) else "",
    )


def write_status(path: Path, status: RecordingStatus) -> None:
    """Write the status atomically (raises OSError when its directory cannot be written)."""
    _write_atomically(path, asdict(status))


# ---------------------------------------------------------------- journal records
#
# What a kernel appends to its journal (``journal.py``) and the server reads back
# (``ingest.py``): one class per ``kind``, written only through ``encode_record`` and read
# only through ``decode_record``, so the two sides cannot drift. The lines are internal
# (docs/format.md, "Files on disk"): they never reach the browser, so they have no JSON
# Schema of their own; the step inside a ``step`` record is ``step.schema.json``'s.


@dataclass(frozen=True)
class TrajectoryRecord:
    """``kind: trajectory``: a kernel began a trajectory; the first line of every journal
    file (a fresh file after a deleted one starts with it again)."""

    kind: ClassVar[str] = "trajectory"
    trajectory_id: str
    kernel_id: str
    notebook_path: str | None
    started_at: str
    format_version: int | None = None
    pid: int | None = None


@dataclass(frozen=True)
class StartedRecord:
    """``kind: started``: a cell began executing. Not stored: it lets the server predict
    the running cell's output before its step lands."""

    kind: ClassVar[str] = "started"
    trajectory_id: str
    kernel_id: str
    notebook_path: str | None
    step: int
    """The number the cell's step will have."""
    cell_id: str | None
    code: str
    """The cell's code, clipped and masked as its step's will be."""
    at: str | None


@dataclass(frozen=True)
class StepRecord:
    """``kind: step``: one executed cell (``records.Step``, without ``kind``)."""

    kind: ClassVar[str] = "step"
    step: Step

    @property
    def trajectory_id(self) -> str:
        return self.step["trajectory_id"]


@dataclass(frozen=True)
class RecordingRecord:
    """``kind: recording``: the kernel's recording was switched on or off."""

    kind: ClassVar[str] = "recording"
    trajectory_id: str
    on: bool
    at: str


@dataclass(frozen=True)
class EndRecord:
    """``kind: end``: the kernel shut down cleanly."""

    kind: ClassVar[str] = "end"
    trajectory_id: str
    at: str | None
    reason: str = "shutdown"


JournalRecord = TrajectoryRecord | StartedRecord | StepRecord | RecordingRecord | EndRecord
JOURNAL_KINDS = tuple(c.kind for c in (TrajectoryRecord, StartedRecord, StepRecord,
                                       RecordingRecord, EndRecord))

MAX_STEP = 2**53
"""Step numbers beyond this are not a kernel's (and SQLite's integers end at 2**63)."""


def encode_record(record: JournalRecord) -> dict[str, Any]:
    """The JSON object of one journal line (``kind`` first; ``journal.encode`` makes the
    line, with ``dumps``)."""
    if isinstance(record, StepRecord):
        return {"kind": "step", **record.step}
    return {"kind": record.kind, **vars(record)}  # not asdict: its deep copies cost the hook


def decode_record(data: Mapping[str, Any]) -> JournalRecord | str:
    """The typed record a journal line's object stands for, or why it is none (an unknown
    kind, a field missing or of the wrong type): the reader skips it with that reason.

    A cheap structural check, not a schema validation (which would cap ingestion
    throughput): whatever passes can be stored, so one odd record never makes the store
    refuse the records around it. Optional fields a kernel left out get the values an
    older kernel meant by leaving them out.
    """
    kind, tid = data.get("kind"), data.get("trajectory_id")
    if kind not in JOURNAL_KINDS:
        return f"an unknown kind {str(kind)[:20]!r}"
    if not isinstance(tid, str):
        return f"a {kind!r} record without a trajectory_id"
    if kind in ("step", "started"):
        number = data.get("step")
        if type(number) is not int or not 0 < number < MAX_STEP:
            return f"a {kind!r} record whose step is not a number from 1 to 2**53"
    if kind == "step":
        if not data.keys() >= _step_fields():  # a subset test allocates nothing
            missing = _step_fields() - data.keys()
            return f"a 'step' record without {', '.join(sorted(missing))}"
        if not isinstance(data["kernel_id"], str) or not isinstance(data["started_at"], str):
            return "a 'step' record whose kernel_id or started_at is not text"
        step: Step = {k: v for k, v in data.items() if k != "kind"}  # type: ignore[assignment]
        return StepRecord(step)
    if kind == "started":
        if not isinstance(data.get("code"), str):
            return "a 'started' record without its code"
        return StartedRecord(tid, str(data.get("kernel_id", "unknown")),
                             _text(data.get("notebook_path")), data["step"],
                             _text(data.get("cell_id")), data["code"], _text(data.get("at")))
    if kind == "trajectory":
        version, pid = data.get("format_version"), data.get("pid")
        return TrajectoryRecord(tid, str(data.get("kernel_id", "unknown")),
                                _text(data.get("notebook_path")),
                                str(data.get("started_at", "")),
                                version if type(version) is int else None,
                                pid if type(pid) is int else None)
    if kind == "recording":
        on = data.get("on")
        if not isinstance(on, bool):
            return "a 'recording' record without on: true or false"
        return RecordingRecord(tid, on, str(data.get("at", "")))
    return EndRecord(tid, _text(data.get("at")), str(data.get("reason", "shutdown")))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


@functools.cache
def _step_fields() -> frozenset[str]:
    """The fields every step has (``step.schema.json``'s ``required``), read on first use:
    only the server decodes, and the kernel must not load schemas."""
    from themisto_ext.records import schema

    return frozenset(schema("step")["required"])
