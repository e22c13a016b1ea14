"""Inline completion by the embedded code model (Qwen2.5-Coder 0.5B, installed by the test
command): fill-in-the-middle over the notebook and its runtime state (a real
jupyter_server, kernel and llama.cpp)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from itertools import pairwise

import numpy as np
import pytest
from test_server import start_kernel, wait_for_steps

from themisto_ext.prediction.clients.base import Completion
from themisto_ext.prediction.clients.local import models
from themisto_ext.prediction.completion import fill, one_argument
from themisto_ext.prediction.names import (
    MOST_NAMES,
    grammar,
    kind_at,
    leading,
    usable,
    verdict,
)
from themisto_ext.prediction.prompts.code import build_infill, build_next_cell, notebook_script

CODE_MODEL = "qwen2.5-coder-0.5b"


def step(n: int, code: str, output: str = "", variables: dict | None = None) -> dict:
    return {"step": n, "code": code, "output": output, "runtime_variables": variables or {},
            "execution_time": 0.01}


FRAME = {"type": "DataFrame", "size": 300, "shape": [5, 2],
         "repr": "   score_0  score_1\n0     0.1      0.2"}


def test_the_notebook_is_a_script_and_the_state_comments():
    history = [step(1, "import pandas as pd"),
               step(2, "df = make()\ndf.shape", "(5, 2)", {"df": FRAME, "pd": {
                   "type": "module", "size": None, "repr": "<module 'pandas'>"}})]
    script = notebook_script(history, 10_000)
    assert script == ("# In[1]:\nimport pandas as pd\n\n"
                      "# In[2]:\ndf = make()\ndf.shape\n# Out: (5, 2)\n\n")
    full = build_infill(history, "df['sc", "']", "full")
    # each cell with what it did to the state under its output, then the typed cell
    assert full.before == (
        "# In[1]:\nimport pandas as pd\n\n"
        "# In[2]:\ndf = make()\ndf.shape\n# Out: (5, 2)\n"
        "# State: df: DataFrame, shape (5, 2)\n"
        "#        score_0  score_1\n#     0     0.1      0.2\n"
        "# State: pd: module\n#     <module 'pandas'>\n\n# In[3]:\ndf['sc")
    assert full.after == "']"
    curated = build_infill(history, "df['sc", "", "curated").before
    assert "# df: DataFrame" in curated  # the name the typed cell reads
    assert build_infill(history, "df['sc", "", "none").before == script + "# In[3]:\ndf['sc"
    # a completion and the next cell share everything before the typed text: one cache
    nxt = build_next_cell(history, "", "full")
    assert full.before.startswith(nxt.before) and nxt.stop and not nxt.line
    # the oldest cells go first when the budget cuts; the newest stays whole
    assert notebook_script(history, 40) == "# In[2]:\ndf = make()\ndf.shape\n# Out: (5, 2)\n\n"


def test_an_error_is_its_traceback_last_line():
    traceback = ("-----\nKeyError        Traceback (most recent call last)\nCell In[2], line 1\n"
                 "----> 1 df['scroe']\nFile /srv/env/pandas/core/frame.py:4107\n"
                 "KeyError: 'scroe'")
    failed = {**step(2, "print('total')\ndf['scroe']", f"total\n{traceback}"),
              "error": {"ename": "KeyError", "evalue": "'scroe'", "traceback": traceback}}
    script = notebook_script([step(1, "df = make()"), failed], 10_000)
    assert script.endswith("df['scroe']\n# Out: total\n# Out: KeyError: 'scroe'\n\n")


def test_a_step_extends_the_script_of_the_step_before():
    """What the model read for one step is the beginning of what it reads for the next
    (its prompt cache keeps it), the state included: changed and deleted names go under
    the cell that changed them, and a cut opens with the state the cut cells left."""
    history = [step(1, "a = 1", "", {"a": {"type": "int", "repr": "1"}})]
    for n in range(2, 60):
        variables = {"a": {"type": "int", "repr": str(n)}}
        if n % 2:
            variables[f"b{n}"] = {"type": "list", "length": n, "repr": str(list(range(n)))}
        history.append(step(n, f"a = {n}" + (f"\nb{n} = list(range({n}))" if n % 2 else ""),
                            str(n), variables))
    scripts = [build_next_cell(history[:n], "", "full").before for n in range(1, 60)]
    grew = sum(later.startswith(earlier.rsplit("# In[", 1)[0])
               for earlier, later in pairwise(scripts))
    assert grew >= 50  # all but the few steps where the oldest cells are cut
    # a's repr is the cell's output (7): said once, under "Out"
    assert "# Out: 7\n# State: a: int\n# State: b7: list, length 7\n#     [0, 1" in scripts[6]
    assert "# Deleted: b7\n" in scripts[7]  # cell 8 dropped b7
    cut = scripts[-1]
    assert cut.startswith("# Runtime state before cell ") and "# In[1]:" not in cut
    assert len(cut) <= 6_000


def test_a_suggestion_is_the_argument_at_the_cursor():
    assert one_argument("x = rng.", "rand(5), 'B': rng.rand(5)})") == "rand(5),"
    assert one_argument("people['wei", "ght_kg']") == "ght_kg']"
    # commas in strings and in brackets the suggestion opens do not end it; a bracket
    # typed before the cursor may close first
    assert one_argument("f('a", "b, c', d)") == "b, c',"
    assert one_argument("s = 'it\\'s", ", here'") == ", here'"
    assert one_argument("f(x", ") + g(a, b)") == ") + g(a, b)"
    assert one_argument("f(x", "), y") == "),"
    assert one_argument("d = {", "'a': 1, 'b': 2}") == "'a': 1,"
    # in a comment nothing ends it
    assert one_argument("y = x", " + 1  # a, b") == " + 1  # a, b"
    assert one_argument("# see a", ", b and c") == ", b and c"


class Streaming:
    """A code model's infill as the local predictor gives it: pieces streamed to
    ``on_text`` one by one (each after the event loop's turn), cancellable between them."""

    name = "hybrid"

    def __init__(self, pieces: list[str]) -> None:
        self.pieces, self.written, self.cancelled = pieces, "", False

    async def infill(self, request, session, on_text=None) -> Completion:
        import asyncio

        try:
            for piece in self.pieces:
                await asyncio.sleep(0.01)
                self.written += piece
                if on_text is not None:
                    on_text(self.written)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return Completion(text=self.written, model="m", latency=0.0)


async def test_the_model_stops_once_the_argument_is_complete():
    history = [step(1, "import numpy as np\nrng = np.random.RandomState(0)")]
    model = Streaming(["rand", "(5", "),", " 'B'", ": rng", ".rand", "(5)})\n"])
    seen: list[str] = []
    done = await fill(model, history, "df = pd.DataFrame({'A': rng.", "", "full", None,
                      seen.append)
    assert done.completion == "rand(5)," and done.reason is None
    assert seen == ["rand", "rand(5", "rand(5),"]
    assert model.cancelled and model.written == "rand(5),"  # nothing written past it
    # without a comma the whole line, and the model is not stopped
    model = Streaming(["sum", "()", "\n"])
    done = await fill(model, history, "total = rng.rand(3).", "", "full", None)
    assert done.completion == "sum()" and not model.cancelled


def test_a_pause_names_an_attribute_or_a_key_and_the_kernel_names_judge_it():
    assert kind_at("x = np.") == "attribute" and kind_at("rng.rand(3).") == "attribute"
    assert kind_at("df[") == "key" and kind_at("data['a'][") == "key"
    assert kind_at("x = 1.") is None and kind_at("print(") is None and kind_at("") is None
    # the leading name decides; a name still growing is not judged yet
    names = ["values", "index", "Series"]
    assert verdict("attribute", "values.sum()", names, ended=True) is True
    assert verdict("attribute", "valuez()", names, ended=True) is False
    assert verdict("attribute", "val", names, ended=False) is None
    assert verdict("attribute", "val", names, ended=True) is False
    assert verdict("attribute", " x", names, ended=False) is False  # no name after ``.``
    keys = ["'age'", "'score'"]
    assert verdict("key", "'age']", keys, ended=True) is True
    assert verdict("key", '"age"].mean()', keys, ended=True) is True  # its value counts
    assert verdict("key", "'agee']", keys, ended=True) is False
    assert verdict("key", "'ag", keys, ended=False) is None
    assert verdict("key", "0]", keys, ended=True) is True  # an index: nothing to check
    assert verdict("key", "'age']", ["sum", "np"], ended=True) is True  # no keys listed
    assert usable("attribute", ["a_b", "'k'", "x.y", "B2"]) == ["a_b", "B2"]
    assert usable("key", ["a_b", "'k'", '"q r"']) == ["'k'", '"q r"']
    assert usable("attribute", [f"n{i}" for i in range(MOST_NAMES + 1)]) == []
    names = ["b", "a", '"q"', "ab", "abc", "abd", "x_1", *dir(np)]
    rules = grammar(names).splitlines()
    assert rules[0] == "root ::= name end" and rules[-1] == "end ::= [^A-Za-z0-9_]"
    assert sentences(rules) == set(names)  # the names, all and only
    assert len(rules[1].split(" | ")) < 60  # a tree: a branch per first character
    assert leading("attribute", "array([1])") == "array" and leading("attribute", "(") == ""
    assert leading("key", "'a b'].sum()") == "'a b'"


def sentences(rules: list[str], rule: str = "name") -> set[str]:
    """Every text a grammar's ``rule`` (``grammar``'s literals and rule names) allows."""
    found: set[str] = set()
    body = next(line for line in rules if line.startswith(f"{rule} ::= "))
    for branch in body.split(" ::= ", 1)[1].split(" | "):
        literal, _, below = branch.rpartition('" ')
        if not literal:  # a literal alone
            found.add(json.loads(branch))
            continue
        found |= {json.loads(literal + '"') + rest for rest in sentences(rules, below)}
    return found


class Listing(Streaming):
    """A code model that writes ``pieces``, and under a grammar of names the first."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__(pieces)
        self.grammars: list[str] = []

    async def infill(self, request, session, on_text=None) -> Completion:
        if request.grammar is None:
            return await super().infill(request, session, on_text)
        self.grammars.append(request.grammar)
        first = min(sentences(request.grammar.splitlines()))
        return Completion(text=first + "(", model="m", latency=0.0)  # the name, then its end


async def test_a_name_the_kernel_does_not_list_is_never_shown():
    history = [step(1, "import pandas as pd")]
    asked: list[str] = []

    async def names() -> list[str]:
        asked.append("names")
        return ["DataFrame", "Series", "read_csv"]

    model, seen = Listing(["values", ".sum", "()\n"]), []
    done = await fill(model, history, "data = pd.", "", "full", None, seen.append, names)
    assert done.completion == "DataFrame" and done.reason is None  # held to the listed
    assert seen == ["DataFrame"]  # ``values`` never reached the browser
    assert len(model.grammars) == 1
    # a listed name streams as the model writes it
    model, seen = Listing(["Ser", "ies(", "[1, 2])\n"]), []
    done = await fill(model, history, "s = pd.", "", "full", None, seen.append, names)
    assert done.completion == "Series([1, 2])" and not model.grammars
    assert seen == ["Series(", "Series([1, 2])"]
    # without runtime state the kernel is not asked; in a string, a number: not judged
    asked.clear()
    model = Listing(["values", "\n"])
    done = await fill(model, history, "data = pd.", "", "none", None, None, names)
    assert done.completion == "values" and not asked
    for typed in ("print('pd.", "x = 1.", "f(pd.x) # pd."):
        done = await fill(Listing(["values\n"]), history, typed, "", "full", None, None, names)
        assert done.completion == "values" and not asked, typed

    async def silent() -> list[str] | None:  # no idle kernel, or no answer in time
        return None
    done = await fill(Listing(["values\n"]), history, "d = pd.", "", "full", None, None,
                      silent)
    assert done.completion == "values"


@pytest.fixture
def jp_server_config(themisto_config) -> dict:
    assert models.installed_path(CODE_MODEL), "scripts/test.sh installs the code model"
    return themisto_config(predictors=["hybrid"], contexts=["full"], model=CODE_MODEL)


async def complete(jp_fetch, kernel_id: str, beginning: str, after: str = "") -> dict:
    # (a busy machine may take a while: the tests wait for the answer, not a fixed time)
    r = await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(
        {"kernel_id": kernel_id, "beginning": beginning, "after": after}),
        request_timeout=300)
    return json.loads(r.body)


async def test_the_code_model_completes_from_the_runtime_state(jp_fetch, jp_serverapp):
    r = await jp_fetch("themisto", "api", "predictors")
    predictors = json.loads(r.body)
    assert predictors["completer"] == "hybrid"  # the embedded code model fills in code
    (process,) = predictors["local_models"]
    assert process["model"] == models.MODELS[CODE_MODEL].file
    assert process["model_bytes"] == models.MODELS[CODE_MODEL].size
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        # column names that only the runtime state shows (computed, never written out)
        await client.execute_interactive(
            "import pandas as pd\nnames = ['height_cm', 'weight_kg']\n"
            "people = pd.DataFrame([[170, 65], [182, 80]], columns=names)", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        done = await complete(jp_fetch, kernel_id, "people['wei")
        assert done["predictor"] == "hybrid" and done["reason"] is None, done
        assert done["completion"].startswith("ght_kg']"), done
        assert "\n" not in done["completion"]  # the rest of the line
        # text after the cursor is kept: the model fills the middle
        middle = await complete(jp_fetch, kernel_id, "bmi = people['weight_kg'] / (people['",
                                after="'] / 100) ** 2")
        assert middle["completion"] and middle["completion"].startswith("height_cm"), middle
    finally:
        client.stop_channels()


async def test_an_attribute_is_one_the_live_object_has(jp_fetch, jp_serverapp,
                                                       monkeypatch):
    """After ``obj.`` the suggestion is a name the kernel lists for the live object: here
    one set at run time under a computed name, which neither the code nor the recorded
    state shows."""
    import asyncio

    from themisto_ext.prediction import completion
    from themisto_ext.server.api import predictions
    from themisto_ext.server.kernel_names import kernel_names

    # (the product waits 0.6 s for the kernel's names; a busy test machine may need more)
    monkeypatch.setattr(completion, "NAMES_WAIT", 120.0)
    monkeypatch.setattr(predictions, "NAMES_WAIT", 120.0)
    code = ("class Box:\n    pass\n\nbox = Box()\n"
            "setattr(box, bytes([113, 122, 95, 107]).decode(), 3)")  # (qz_k)
    async with kernel_after(jp_fetch, jp_serverapp, code) as kernel_id:
        manager = jp_serverapp.kernel_manager
        assert await kernel_names(manager, kernel_id, "w = box.", 120) == ["qz_k"]
        assert await kernel_names(manager, "no-such-kernel", "box.", 120) is None
        done = await complete(jp_fetch, kernel_id, "w = box.")
        assert done["reason"] is None and done["completion"].startswith("qz_k"), done
        # a kernel running a cell is not asked (the question would wait behind the cell)
        themisto = jp_serverapp.web_app.settings["themisto"]
        asked: list[str] = []

        async def counted(*args):
            asked.append(args[2])
            return await kernel_names(*args)
        monkeypatch.setattr(predictions, "kernel_names", counted)
        client = manager.get_kernel(kernel_id).client()
        client.start_channels()
        try:
            client.execute("import time; time.sleep(600)")
            for _ in range(1200):  # the cell's start, as the journal tells it
                await themisto.ingest_now()
                if themisto.live._running:
                    break
                await asyncio.sleep(0.05)
            assert themisto.live._running
            done = await complete(jp_fetch, kernel_id, "w = box.")
            assert done["predictor"] == "hybrid", done  # the model's text, unchecked
            assert not asked
        finally:
            await manager.interrupt_kernel(kernel_id)
            client.stop_channels()


async def test_a_newer_keystroke_leaves_no_stale_work(jp_fetch, jp_serverapp):
    """Completions asked one after another each answer; the model keeps up."""
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        answers = [await complete(jp_fetch, kernel_id, typed)
                   for typed in ("sorted(va", "sorted(val", "sorted(valu")]
        assert all(a["completion"] for a in answers), answers
    finally:
        client.stop_channels()


async def test_the_code_model_writes_next_cells_but_never_a_repeat_or_a_variant():
    """Under ``hybrid`` a code model writes the next cell where no variation applies; a
    copy or a variant of a cell already run, or comments alone, is an abstention. By
    default its cells are not shown (measured below copying): it reads the notebook so
    that the completion typed next begins warm."""
    import asyncio

    from themisto_ext.prediction.clients import make_predictor
    from themisto_ext.prediction.clients.hybrid import HybridPredictor, _is_variant
    from themisto_ext.prediction.run import predict
    from themisto_ext.records import Scope

    cells = [step(1, "import pandas as pd"),
             step(2, "df = pd.read_csv('students.csv')\ndf.head()",
                  "   name  age  score\n0  Ann   21   80\n1  Bob   22   70"),
             step(3, "df['age'].mean()", "21.5"),
             step(4, "df.describe()", "        age  score\ncount   2.0    2.0")]
    shown = HybridPredictor(make_predictor("local", local_model=CODE_MODEL), cells=True)
    try:
        got = [await predict(shown, cells[:n], "next-cell", "full", scope=Scope("t"),
                             target_step=n + 1, session="s") for n in range(1, 5)]
    finally:
        await shown.aclose()
    by_model = [r for r in got if r["model"].startswith("hybrid:qwen2.5-coder-0.5b")]
    for n, record in enumerate(got, start=1):
        assert record["error"] is None, record
        if record in by_model and not record["abstained"]:
            answer = record["answer"]
            assert answer.strip() and "# In[" not in answer and "# Out" not in answer
            assert not _is_variant(answer, cells[:n]), (n, answer)
    assert any(not r["abstained"] for r in by_model), got  # it does write cells

    default = make_predictor("hybrid", local_model=CODE_MODEL)
    try:
        assert default.model_next_cells is False  # type: ignore[attr-defined]
        quiet = await predict(default, cells[:1], "next-cell", "full", scope=Scope("t"),
                              target_step=2, session="t")
        assert (quiet["answer"], quiet["model"], quiet["abstained"]) == (
            "", "hybrid:abstain", True), quiet
        typed = await default.infill(build_infill(cells[:1], "import num", "", "full"),
                                     "t")  # type: ignore[attr-defined]
        assert typed.prompt_tokens - typed.cached_tokens <= 8, typed  # read when it abstained
        # where a variation answers at once, the model still reads behind it
        varied = [step(1, "import numpy as np\nx = np.arange(5)"), step(2, "x > 3", "...")]
        nxt = await predict(default, varied, "next-cell", "full", scope=Scope("v"),
                            target_step=3, session="v")
        assert (nxt["answer"], nxt["model"]) == ("x < 3", "hybrid:variation"), nxt
        for _ in range(3000):  # (a busy machine: waits for the read, not a fixed time)
            if not default._reads:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.1)
        typed = await default.infill(build_infill(varied, "x <", "", "full"),
                                     "v")  # type: ignore[attr-defined]
        assert typed.prompt_tokens - typed.cached_tokens <= 8, typed  # fails unread
    finally:
        await default.aclose()


async def test_the_next_keystroke_cancels_the_completion_under_way(jp_fetch, jp_serverapp):
    import asyncio

    live = jp_serverapp.web_app.settings["themisto"].live
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        # a long typed text the model has not read: seconds of work, under way when the
        # next keystroke's request comes
        long = "".join(f"total_{i} = sum(values) * {i}\n" for i in range(150)) + "sorted(va"
        first = asyncio.ensure_future(complete(jp_fetch, kernel_id, long))
        for _ in range(600):
            if live._completing:
                break
            await asyncio.sleep(0.05)
        assert live._completing, "the first completion never started"
        second = await complete(jp_fetch, kernel_id, "sorted(val")
        replaced = await first
        assert replaced["completion"] is None, replaced
        assert replaced["reason"] == "a newer keystroke replaced it"
        assert second["completion"], second
        assert not live._completing and not live._replaced  # nothing left behind
    finally:
        client.stop_channels()


async def test_a_request_the_browser_gives_up_stops_its_model(
        jp_fetch, jp_serverapp, http_server_client, jp_base_url, jp_auth_header):
    """The front end aborts a completion request at the next keystroke: the server cancels
    its job (the model stops at its next token) instead of writing an answer nobody reads."""
    import asyncio

    import httpx

    live = jp_serverapp.web_app.settings["themisto"].live
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive("values = [3, 1, 2]", timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        url = http_server_client.get_url(f"{jp_base_url}themisto/api/completions")
        long = "".join(f"total_{i} = sum(values) * {i}\n" for i in range(150)) + "sorted(va"
        async with httpx.AsyncClient(headers=dict(jp_auth_header), timeout=120) as http:
            asked = asyncio.ensure_future(http.post(url, json={
                "kernel_id": kernel_id, "beginning": long}))
            for _ in range(600):
                if live._completing:
                    break
                await asyncio.sleep(0.05)
            (job,) = live._completing.values()
            asked.cancel()  # the browser's abort: the connection closes
            for _ in range(600):
                if job.done():
                    break
                await asyncio.sleep(0.05)
        assert job.cancelled(), "the job ran on after its request was given up"
        assert not live._completing
        # and the model is free for the next keystroke's request
        done = await complete(jp_fetch, kernel_id, "sorted(val")
        assert done["completion"], done
    finally:
        client.stop_channels()


PEOPLE = ("import pandas as pd\nnames = ['height_cm', 'weight_kg']\n"
          "people = pd.DataFrame([[170, 65], [182, 80]], columns=names)")


@contextlib.asynccontextmanager
async def kernel_after(jp_fetch, jp_serverapp, code: str) -> AsyncIterator[str]:
    """A kernel of the server that has run and recorded ``code`` (its id)."""
    kernel_id, client = await start_kernel(jp_fetch, jp_serverapp)
    try:
        await client.execute_interactive(code, timeout=60)
        await wait_for_steps(jp_fetch, kernel_id, 1)
        yield kernel_id
    finally:
        client.stop_channels()


async def test_a_completion_streams_as_the_model_writes(
        jp_fetch, jp_serverapp, http_server_client, jp_base_url, jp_auth_header, api_contract):
    """``stream: true``: NDJSON lines of the text so far, sent as the model writes (before
    the answer is complete), then the answer with ``done``; each line as documented."""
    import time

    import httpx

    async with kernel_after(jp_fetch, jp_serverapp, PEOPLE) as kernel_id:
        url = http_server_client.get_url(f"{jp_base_url}themisto/api/completions")
        typed = "bmi = people['weight_kg'] / (people['"
        chunks: list[tuple[float, bytes]] = []
        async with httpx.AsyncClient(headers=dict(jp_auth_header), timeout=300) as http, \
                http.stream("POST", url, json={"kernel_id": kernel_id, "beginning": typed,
                                               "stream": True}) as reply:
            assert reply.status_code == 200
            media = reply.headers["content-type"]
            async for chunk in reply.aiter_bytes():
                chunks.append((time.monotonic(), chunk))
        body = b"".join(chunk for _, chunk in chunks)
        api_contract.check(url, "POST", 200, media, body)  # each line as openapi.yaml says
        lines = [json.loads(line) for line in body.decode().splitlines()]
        *partial, final = lines
        assert final["done"] is True and final["reason"] is None, final
        assert final["completion"].startswith("height_cm"), final
        assert partial, "nothing was streamed before the answer"
        texts = [p["completion"] for p in partial]
        assert all(b.startswith(a) and a != b for a, b in pairwise(texts)), texts
        assert final["completion"].startswith(texts[-1]), (texts, final)
        # sent as written, not held back with the answer
        assert not chunks[0][1].decode().rstrip("\n").endswith("true}"), chunks


async def test_a_streamed_request_with_nothing_to_complete_is_one_line(jp_fetch, jp_serverapp):
    async with kernel_after(jp_fetch, jp_serverapp, "x = 1") as kernel_id:
        r = await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(
            {"kernel_id": kernel_id, "beginning": "   ", "stream": True}))
        assert r.headers["Content-Type"].startswith("application/x-ndjson")
        (line,) = r.body.decode().splitlines()
        assert json.loads(line) == {"completion": None, "predictor": None,
                                    "reason": "nothing typed before the cursor",
                                    "trajectory_id": json.loads(line)["trajectory_id"],
                                    "after_step": 1, "done": True}
        with pytest.raises(Exception) as bad:
            await jp_fetch("themisto", "api", "completions", method="POST", body=json.dumps(
                {"kernel_id": kernel_id, "beginning": "x", "stream": "yes"}))
        assert bad.value.code == 400 and b"stream" in bad.value.response.body
