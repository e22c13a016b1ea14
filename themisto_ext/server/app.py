"""The Jupyter server extension: configuration (traitlets), handlers, the kernel provisioner.

Everything the server does at run time is ``core.Themisto``; this module wires it into
Jupyter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Int, List, TraitError, Unicode, default, validate

from themisto_ext.contract import (
    CAPTURE_ENV,
    CAPTURE_LEVELS,
    JOURNAL_DIR_ENV,
    STORE_PASSWORD_ENV,
    CaptureSettings,
    captures_outputs,
    default_store_path,
    default_user,
    journal_dir_for,
)
from themisto_ext.events import LiveEvents
from themisto_ext.prediction.clients import (
    Limits,
    Predictor,
    local_model_available,
    make_predictor,
    runs_local_model,
)
from themisto_ext.prediction.live import LivePredictions
from themisto_ext.prediction.prompts import CONTEXTS, PredictionContext
from themisto_ext.server import api
from themisto_ext.server.access import READ_ALL_SCOPE, AccessPolicy
from themisto_ext.server.core import HEARTBEAT, SETTINGS_KEY, Themisto
from themisto_ext.server.provisioner import NAME as PROVISIONER_NAME
from themisto_ext.server.renames import RenameListener
from themisto_ext.server.settings import ServerSettings, launch_with
from themisto_ext.store import (
    SQLITE,
    StoreError,
    TrajectoryStore,
    guard,
    open_store,
    parse_store_url,
)
from themisto_ext.store.aio import AsyncStore

_CAPTURE = CaptureSettings()

CAPTURE_TRAITS = {
    "recording": "recording", "redact": "redact", "redact_name_patterns": "name_patterns",
    "redact_value_patterns": "value_patterns", "repr_length": "repr_length",
    "output_length": "output_length", "cell_budget": "cell_budget",
    "value_budget": "value_budget", "capture_level": "level",
}
"""The traitlets that configure what kernels capture, and the ``CaptureSettings`` field
each sets (their defaults are that field's)."""


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


class ThemistoExtension(ExtensionApp):
    name = "themisto_ext"
    description = "Record notebook trajectories and predict what happens next."

    store_path = Unicode(
        help="SQLite file of the trajectory store (default: <jupyter data dir>/themisto/"
             "trajectories.sqlite3); store_url, when set, takes precedence."
    ).tag(config=True)
    store_url = Unicode(
        help="The trajectory store: sqlite:///PATH (default: sqlite:///<store_path>), "
             "postgresql://USER@HOST:PORT/DATABASE, one database many servers share (the "
             "password comes from PGPASSWORD or ~/.pgpass, never from the URL into logs), "
             "or the hub's Themisto service, http(s)://HOST:PORT/services/themisto/ (the "
             "server's JupyterHub token; no database login on the server)."
    ).tag(config=True)
    user = Unicode(
        help="The user this server records as: every trajectory its kernels record is "
             "theirs, and with jupyter_server's own token or password login (which names "
             "nobody) whoever holds the token reads as them. Default: JUPYTERHUB_USER, "
             "else the login name."
    ).tag(config=True)
    read_all_users = List(
        Unicode(), default_value=[],
        help="Users who may read and export every user's trajectories (others see only "
             "their own).",
    ).tag(config=True)
    read_all_scope = Unicode(
        READ_ALL_SCOPE,
        help="Under JupyterHub: a scope whose holders may read and export every user's "
             "trajectories (declare it in c.JupyterHub.custom_scopes and grant it by a "
             "role); empty to rely on read_all_users only.",
    ).tag(config=True)
    journal_dir = Unicode(
        help="Directory where kernels append their journals (default: 'journal' beside "
             "the store)."
    ).tag(config=True)
    autoload = Bool(True, help="Load the capture hook into every IPython kernel this server "
                               "launches.").tag(config=True)
    recording = Bool(_CAPTURE.recording, help="Whether kernels record from their start (each "
                                              "kernel can still be switched on or off).").tag(
        config=True)
    capture_level = Unicode(
        _CAPTURE.level,
        help="What every kernel records, for everyone on this server: 'code' (code and "
             "timing only), 'code+outputs' (and what the cells showed), "
             "'code+outputs+state' (and the runtime state: variables, state hash, memory, "
             "traces). What is not recorded is not kept, and no prompt holds it.",
    ).tag(config=True)
    redact = Bool(_CAPTURE.redact, help="Redact secrets before they leave the kernel.").tag(
        config=True)
    redact_name_patterns = List(
        Unicode(), default_value=list(_CAPTURE.name_patterns),
        help="Variable-name globs (case-insensitive) whose values are redacted.",
    ).tag(config=True)
    redact_value_patterns = List(
        Unicode(), default_value=list(_CAPTURE.value_patterns),
        help="Regular expressions of credential formats masked in code, outputs and reprs.",
    ).tag(config=True)
    repr_length = Int(_CAPTURE.repr_length, help="Maximum characters of a variable's repr.").tag(
        config=True)
    output_length = Int(_CAPTURE.output_length,
                        help="Maximum characters of output kept per step.").tag(config=True)
    cell_budget = Float(_CAPTURE.cell_budget,
                        help="Seconds the runtime snapshot may take per cell.").tag(config=True)
    value_budget = Float(_CAPTURE.value_budget,
                         help="Seconds one value's repr or size may take.").tag(config=True)
    ingest_interval = Float(0.05, help="Seconds between scans of the kernel journals.").tag(
        config=True)
    heartbeat_interval = Float(
        HEARTBEAT, help="Seconds between the live stream's heartbeat events: a page that "
                        "hears none for twice as long shows its connection as down, and "
                        "one that reconnected learns from the next what it missed.").tag(
        config=True)
    store_retry = Float(5.0, help="Seconds between attempts to open, or write to, a store "
                                  "that could not be used (steps wait in the journals).").tag(
        config=True)
    predictors = List(
        Unicode(),
        help="Predictors run live on every cell, by name: baseline, copy-previous, hybrid, "
             "local, local:PATH.gguf, "
             "openai:MODEL (OPENAI_BASE_URL, OPENAI_API_KEY), anthropic:MODEL "
             "(ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY), or hybrid: followed by a model's form "
             "(hybrid:openai:MODEL: the rules where they apply, that model elsewhere, next "
             "cells included). Default: hybrid when the embedded "
             "model is installed, else copy-previous. An empty list turns predictions off.",
    ).tag(config=True)
    contexts = List(
        Unicode(), default_value=["full"],
        help="PredictionContext conditions of live predictions: none, full, curated.",
    ).tag(config=True)
    local_reuse_prefix = Bool(True, help="Let the local model reuse the KV cache of the prompt "
                                         "prefix a session shares with its previous prompt "
                                         "(off only to measure what reuse buys).").tag(
        config=True)
    model = Unicode(
        "", help="The embedded model of the local and hybrid predictors that name none: a "
                 "name of `themisto models list` (smollm2-135m, qwen2.5-coder-0.5b, "
                 "qwen2.5-coder-1.5b; installed with `themisto models install NAME`) or a "
                 "GGUF file's path; empty: the embedded default (qwen2.5-coder-0.5b, or "
                 "$THEMISTO_MODEL).",
    ).tag(config=True)
    local_adapter = Unicode(
        "", help="A LoRA adapter GGUF (themisto finetune) the local model applies, for the "
                 "local and hybrid predictors that name none; empty: the base model.",
    ).tag(config=True)
    local_max_tokens = Int(64, help="Longest answer the local model writes for a live "
                                    "prediction (tokens); generation dominates its latency.").tag(
        config=True)
    local_prompt_threads = Int(
        0, min=0, help="Threads the local model reads prompts on; 0: half the CPUs this server may "
                "use (one on 2 cores). llama.cpp's threads wait for each other after every "
                "step, so more threads than the cores a computing kernel leaves free stall "
                "the model (and slow the kernel); on 2 idle cores 2 threads read ~1.7x "
                "faster.").tag(config=True)
    local_job_deadline = Float(
        120.0, help="Seconds a local-model job may go without evaluating a token before its "
                    "process counts as hung: it is killed and restarted, the job ends as "
                    "ModelProcessHung.").tag(config=True)
    local_max_crashes = Int(
        3, help="Deaths or hangs of the local model's process within local_crash_window "
                "seconds that switch the local model off for this server.").tag(config=True)
    local_crash_window = Float(
        300.0, help="Seconds over which local_max_crashes are counted.").tag(config=True)
    live_predictions = Bool(True, help="Predict every running cell's output and, after each "
                                       "step, the next cell (else only on request).").tag(
        config=True)
    speculation = Bool(True, help="Predict a cell's output from its text before it runs when "
                                  "the front end announces the text (after a pause in typing, "
                                  "or on selecting the cell); the cell takes that prediction "
                                  "if it starts with the same text after the same step.").tag(
        config=True)
    prediction_budget = Int(8000, help="Characters of trajectory a live prompt may hold; the "
                                       "oldest steps are dropped beyond it.").tag(config=True)
    local_prediction_budget = Int(
        2500, help="The same for the local model: a 135M model answers faster and no worse "
                   "(measured) with a short history, and a new session reads it in ~3 s.").tag(
        config=True)
    max_body_bytes = Int(1024 * 1024, help="Largest request body the API accepts (bytes); "
                                           "larger ones get 413.").tag(config=True)

    @default("store_path")
    def _default_store_path(self) -> str:
        return str(default_store_path())

    @default("store_url")
    def _default_store_url(self) -> str:
        return f"sqlite:///{self.store_path}"

    @default("user")
    def _default_user(self) -> str:
        return default_user()

    @default("predictors")
    def _default_predictors(self) -> list[str]:
        # The best embedded predictor measured on the shared notebooks (docs/results/predictors.md):
        # hybrid beat the model and every reference alone; without the model, copy-previous.
        return ["hybrid"] if local_model_available() else ["copy-previous"]

    @validate("capture_level")
    def _valid_capture_level(self, proposal: Any) -> str:
        if proposal["value"] not in CAPTURE_LEVELS:
            raise TraitError(f"unknown capture_level {proposal['value']!r}: use "
                             f"{', '.join(CAPTURE_LEVELS)}")
        return str(proposal["value"])

    @validate("contexts")
    def _valid_contexts(self, proposal: Any) -> list[str]:
        bad = [c for c in proposal["value"] if c not in CONTEXTS]
        if bad:
            raise TraitError(f"unknown context(s) {bad}: use {', '.join(CONTEXTS)}")
        return list(proposal["value"])

    @default("journal_dir")
    def _default_journal_dir(self) -> str:
        url = parse_store_url(self.store_url)
        # Beside a SQLite store; for a database, in this server's own data directory.
        return str(journal_dir_for(url.path if url.engine == SQLITE else Path(self.store_path)))

    # ------------------------------------------------------------ setup

    def server_settings(self) -> ServerSettings:
        """The traitlets as the one settings object the core and the provisioner take."""
        capture = CaptureSettings(**{field: _copy(getattr(self, trait))
                                     for trait, field in CAPTURE_TRAITS.items()})
        return ServerSettings(journal_dir=Path(self.journal_dir), capture=capture,
                              live_predictions=self.live_predictions,
                              speculation=self.speculation,
                              max_body_bytes=self.max_body_bytes)

    def initialize_settings(self) -> None:
        # Never fails on the store: the server starts whatever state its store is in, and
        # the API and the recording status say why the store cannot be used meanwhile.
        # A password handed over by the hub's spawn hook leaves the environment at once:
        # kernels and terminals started later inherit the environment.
        url = parse_store_url(self.store_url).with_password(
            os.environ.pop(STORE_PASSWORD_ENV, None))
        single_user = url.engine == SQLITE
        user = self.user

        def opener() -> TrajectoryStore:
            store = open_store(url)
            if single_user:
                # A SQLite file is one user's: what it recorded before owners were recorded
                # is this user's. (A shared database gets owners from `themisto migrate`.)
                try:
                    store.adopt_unowned(user)
                except StoreError:
                    pass  # a read-only file: AccessPolicy counts unowned as this user's
            return store

        store = AsyncStore(guard(opener, retry=self.store_retry), embedded=single_user)
        access = AccessPolicy(self.user, frozenset(self.read_all_users), self.read_all_scope,
                              single_user_store=single_user)
        assert self.serverapp is not None  # set before extensions initialize
        # jupyter_server's event bus: JupyterLab's EventManager reads it over one WebSocket
        events = LiveEvents(self.serverapp.event_logger)
        predictors = self._make_predictors()
        local = {p.name: self.local_prediction_budget for p in predictors
                 if runs_local_model(p.name)}
        # checked by _valid_contexts
        contexts = cast("list[PredictionContext]", list(self.contexts))
        live = LivePredictions(store, events, predictors, contexts,
                               self.prediction_budget, local,
                               predict_outputs=captures_outputs(self.capture_level))
        settings = self.server_settings()
        self.themisto = Themisto(settings=settings, store=store, live=live, events=events,
                                 running_kernels=self._running_kernels, access=access,
                                 notebook_exists=self._notebook_exists())
        self.settings[SETTINGS_KEY] = self.themisto
        if self.autoload:
            self._use_provisioner(settings)
            kernels = self.serverapp.kernel_manager
            quiet = replace(settings, capture=replace(settings.capture, recording=False))
            # A user who opted out: the kernels launched from now on start not recording.
            self.themisto.on_consent = lambda on: launch_with(kernels,
                                                              settings if on else quiet)
        self.log.info("themisto: store %s, journals %s, recording as user %r", url.display,
                      self.journal_dir, self.user)

    def _notebook_exists(self) -> Callable[[str], bool] | None:
        """Whether a notebook path names a file now; None where files are not on this
        machine's disk (a contents manager of another kind)."""
        assert self.serverapp is not None
        root = getattr(self.serverapp.contents_manager, "root_dir", None)
        if not isinstance(root, str) or not os.path.isdir(root):
            return None
        return lambda path: os.path.exists(os.path.join(root, path.lstrip("/")))

    def _running_kernels(self) -> list[str]:
        assert self.serverapp is not None
        ids: list[str] = self.serverapp.kernel_manager.list_kernel_ids()
        return ids

    def _local_limits(self) -> Limits:
        return Limits(job_deadline=self.local_job_deadline, max_crashes=self.local_max_crashes,
                      crash_window=self.local_crash_window)

    def _make_predictors(self) -> list[Predictor]:
        made = []
        models: dict[str, Predictor] = {}  # one model process per model file
        for spec in self.predictors:
            try:
                made.append(make_predictor(spec, reuse_prefix=self.local_reuse_prefix,
                                           max_tokens=self.local_max_tokens,
                                           local_limits=self._local_limits(),
                                           local_threads=self.local_prompt_threads or None,
                                           models=models,
                                           local_adapter=Path(self.local_adapter)
                                           if self.local_adapter else None,
                                           local_model=self.model or None))
            except Exception as exc:  # one misconfigured predictor must not stop the server
                self.log.error("themisto: predictor %r unavailable: %s", spec, exc)
        names = ", ".join(p.name for p in made) or "none"
        self.log.info("themisto: live predictors: %s; contexts: %s", names,
                      ", ".join(self.contexts))
        return made

    def _use_provisioner(self, settings: ServerSettings) -> None:
        from jupyter_client.provisioning.factory import KernelProvisionerFactory

        assert self.serverapp is not None  # set before extensions initialize
        launch_with(self.serverapp.kernel_manager, settings)
        factory = KernelProvisionerFactory.instance(parent=self.serverapp.kernel_manager)
        if PROVISIONER_NAME not in factory.provisioners:
            # Running from a source tree that was never installed: no entry point, and a
            # default naming a missing provisioner would stop every kernel from starting.
            self.log.warning("themisto: provisioner entry point missing (is themisto_ext "
                             "pip-installed?); kernels will not record automatically")
            return
        if factory.default_provisioner_name == "local-provisioner":
            factory.default_provisioner_name = PROVISIONER_NAME
        elif factory.default_provisioner_name != PROVISIONER_NAME:
            self.log.warning(
                "themisto: another default kernel provisioner (%s) is configured; kernels "
                "will not record unless they run %%load_ext themisto_ext",
                factory.default_provisioner_name)
            # Kernels that provisioner starts inherit only the server's environment: it
            # is the one way their %load_ext learns where to write and what to capture.
            os.environ[JOURNAL_DIR_ENV] = str(settings.journal_dir)
            os.environ[CAPTURE_ENV] = settings.capture.to_env()

    def initialize_handlers(self) -> None:
        self.handlers.extend(api.routes())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        themisto = getattr(self, "themisto", None)
        if themisto is not None:  # None: initialize_settings failed, and said so
            self._renames = RenameListener(serverapp, themisto)
            self._renames.start()
            await themisto.start(self.ingest_interval, self.heartbeat_interval)

    async def stop_extension(self) -> None:
        themisto = getattr(self, "themisto", None)
        if themisto is None:
            return
        renames: RenameListener | None = getattr(self, "_renames", None)
        if renames is not None:
            renames.stop()
        themisto.events.close()
        await themisto.stop()
