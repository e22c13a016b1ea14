"""The API's written contract, checked on every response and streamed event the tests see.

``docs/openapi.yaml`` names, per route, method and status, the body a client may expect,
and references the record schemas in ``themisto_ext/schemas/``. ``ApiContract.check``
fails a test when the server answers with a status the document does not list, or with a
body its schema rejects; ``check_event`` does the same for each live event.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from themisto_ext.events import LIVE_EVENT_SCHEMA_ID, LiveEvents, live_event
from themisto_ext.records import SCHEMA_NAMES, schema, validator

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = ROOT / "docs" / "openapi.yaml"
PREFIX = "/themisto/api"


class ContractViolation(AssertionError):
    pass


@cache
def spec() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(SPEC_PATH.read_text("utf-8"))
    return loaded


@cache
def _registry() -> Registry[Any]:
    resources = [(SPEC_PATH.as_uri(), Resource.from_contents(spec(),
                                                             default_specification=DRAFT202012))]
    for name in SCHEMA_NAMES:
        resource = Resource.from_contents(schema(name))
        # Reachable both by the $id the schemas use among themselves and by the file path
        # the OpenAPI document uses.
        resources.append((schema(name)["$id"], resource))
        file_uri = (ROOT / "themisto_ext" / "schemas" / f"{name}.schema.json").as_uri()
        resources.append((file_uri, resource))
    return Registry().with_resources(resources)


def _validator(pointer: str) -> Draft202012Validator:
    """A validator of the schema at ``pointer`` inside the OpenAPI document."""
    return Draft202012Validator({"$ref": f"{SPEC_PATH.as_uri()}#{pointer}"},
                                registry=_registry(),
                                format_checker=Draft202012Validator.FORMAT_CHECKER)


@cache
def _templates() -> list[tuple[re.Pattern[str], str]]:
    found = []
    for template in spec()["paths"]:
        pattern = re.escape(template)
        pattern = re.sub(r"\\\{[a-z_]+\\\}", r"[^/]+", pattern)
        found.append((re.compile(f"^{pattern}/?$"), template))
    return found


def template_of(path: str) -> str | None:
    path = path.split("?", 1)[0]
    index = path.find(PREFIX)
    if index < 0:
        return None
    path = path[index:]
    matches = [t for pattern, t in _templates() if pattern.match(path)]
    # A literal route wins over a templated one (``/predictions`` vs ``/predictions/{id}``).
    matches.sort(key=lambda t: t.count("{"))
    return matches[0] if matches else None


def _escape(pointer_part: str) -> str:
    return pointer_part.replace("~", "~0").replace("/", "~1")


class ApiContract:
    def __init__(self) -> None:
        self.checked = 0

    def check(self, url: str, method: str, status: int, content_type: str | None,
              body: bytes) -> None:
        template = template_of(url)
        if template is None:
            return  # not a themisto route
        operations = spec()["paths"][template]
        operation = operations.get(method.lower())
        if operation is None:
            raise ContractViolation(f"{method} {template} is not documented")
        responses = operation["responses"]
        if str(status) not in responses:
            raise ContractViolation(
                f"{method} {template} answered {status}, documented: {sorted(responses)}")
        response = responses[str(status)]
        pointer = f"/paths/{_escape(template)}/{method.lower()}/responses/{status}"
        if "$ref" in response:
            pointer = response["$ref"].removeprefix("#")
            response = _resolve_local(pointer)
        media = (content_type or "").split(";")[0].strip()
        content = response.get("content", {})
        if media == "application/json" and "application/json" in content:
            document = json.loads(body)
            errors = sorted(_validator(f"{pointer}/content/application~1json/schema")
                            .iter_errors(document), key=lambda e: list(e.path))
            if errors:
                raise ContractViolation(
                    f"{method} {template} {status}: body does not match the spec: "
                    + "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]))
        elif media == "application/x-ndjson" and "schema" in content.get(media, {}):
            line_schema = _validator(f"{pointer}/content/application~1x-ndjson/schema")
            for number, line in enumerate(body.decode("utf-8").splitlines(), 1):
                errors = list(line_schema.iter_errors(json.loads(line)))
                if errors:
                    raise ContractViolation(
                        f"{method} {template} {status}: line {number} does not match the "
                        f"spec: {errors[0].message}")
        elif content and media not in content and status != 204:
            raise ContractViolation(f"{method} {template} {status}: content type {media!r}, "
                                    f"documented {sorted(content)}")
        self.checked += 1

    def check_message(self, message: dict[str, Any]) -> dict[str, Any]:
        """The live event a message of the event bus carries (``schema_id`` removed), the
        message checked against live-bus.schema.json and the event against its own."""
        errors = list(validator("live-bus").iter_errors(message))
        if errors:
            raise ContractViolation("bus message does not match live-bus.schema.json: "
                                    + "; ".join(e.message[:300] for e in errors[:3]))
        event: dict[str, Any] = dict(live_event(message))
        self.check_event(message["type"], event)
        return event

    def check_event(self, name: str, data: dict[str, Any]) -> None:
        errors = list(validator("live-event").iter_errors(data))
        if errors:
            raise ContractViolation(f"live event {name}: does not match live-event.schema.json: "
                                    + "; ".join(e.message[:300] for e in errors[:3]))
        if data["type"] != name:
            raise ContractViolation(f"live event named {name!r} has type {data['type']!r}")
        self.checked += 1


def _resolve_local(pointer: str) -> dict[str, Any]:
    node: Any = spec()
    for part in pointer.strip("/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    resolved: dict[str, Any] = node
    return resolved


class LiveStream:
    """The live stream as JupyterLab's ``EventManager`` reads it: jupyter_server's event
    WebSocket (``/api/events/subscribe``), themisto's events kept as ``(type, data)`` in
    ``events`` (when each arrived in ``arrived``), each checked against its schema."""

    def __init__(self, socket: Any, contract: ApiContract) -> None:
        self.socket = socket
        self.contract = contract
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.arrived: list[float] = []
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while (message := await self.socket.read_message()) is not None:
            data = json.loads(message)
            if data.pop("schema_id", None) != LIVE_EVENT_SCHEMA_ID:
                continue  # the bus carries jupyter_server's own events too
            event = self.contract.check_message(data)
            self.events.append((event["type"], event))
            self.arrived.append(time.monotonic())

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == kind]

    def close(self) -> None:
        self._reader.cancel()
        self.socket.close()


async def follow_live(jp_ws_fetch: Any, contract: ApiContract,
                      serverapp: Any = None) -> LiveStream:
    """Subscribe to the server's event bus; with ``serverapp``, return once a heartbeat
    it sends has come through (so the subscription is known to carry events)."""
    stream = LiveStream(await jp_ws_fetch("api", "events", "subscribe"), contract)
    if serverapp is not None:
        serverapp.web_app.settings["themisto"].events.heartbeat(10.0)
        deadline = time.monotonic() + 30
        while not stream.of("heartbeat"):
            assert time.monotonic() < deadline, "no heartbeat came through the event bus"
            await asyncio.sleep(0.01)
    return stream


def listen(events: LiveEvents) -> list[dict[str, Any]]:
    """Every live event ``events`` publishes, as a listener of its bus receives it (after
    ``await events.logger.gather_listeners()``); from now on ``events`` checks each against
    live-event.schema.json as it publishes it (``LiveEvents.check``), and raises for one the
    schema refuses."""
    seen: list[dict[str, Any]] = []
    events.check = True

    async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        seen.append(dict(live_event(data)))

    events.logger.add_listener(schema_id=LIVE_EVENT_SCHEMA_ID, listener=listener)
    return seen


def check_response(contract: ApiContract, response: Any) -> None:
    """Check a tornado ``HTTPResponse``."""
    contract.check(response.effective_url, response.request.method, response.code,
                   response.headers.get("Content-Type"), response.body or b"")
