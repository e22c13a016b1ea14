"""Issue 24: the synthetic corpus (`themisto synth`), LoRA fine-tuning of the embedded model
(`themisto finetune`, a few steps here; the real training is outside the suite), the
adapter as a llama.cpp LoRA GGUF that `local` applies, and the committed adapter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_cli import themisto

from themisto_ext.training.lora_gguf import gguf_name, read_adapter, write_adapter
from themisto_ext.training.synthetic import KINDS, write_corpus

ADAPTERS = Path(__file__).resolve().parents[1] / "themisto_ext" / "adapters"
COMMITTED = ADAPTERS / "themisto-smollm2-135m-lora.gguf"


def test_the_corpus_is_reproducible_from_its_seed(tmp_path: Path):
    first = write_corpus(tmp_path / "a", seed=7, notebooks=6)
    again = write_corpus(tmp_path / "b", seed=7, notebooks=6)
    other = write_corpus(tmp_path / "c", seed=8, notebooks=6)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert [p.read_bytes() for p in first] != [p.read_bytes() for p in other]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["seed"] == 7 and len(manifest["notebooks"]) == 6
    assert {n["kind"] for n in manifest["notebooks"]} <= set(KINDS)
    notebook = json.loads(first[0].read_text())
    assert notebook["nbformat_minor"] == 5 and all(c["id"] for c in notebook["cells"])
    assert notebook["cells"][0]["source"].startswith(("import", "def ", "words",
                                                                     "items", "fruits",
                                                                     "tokens"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three synthetic notebooks recorded in real kernels, their trajectories and an SFT
    export of them."""
    work = tmp_path_factory.mktemp("synth")
    store = work / "store.sqlite3"
    made = themisto("synth", "--out", str(work / "nb"), "--notebooks", "3", "--seed", "5",
                    "--record", store=store)
    assert made.returncode == 0, made.stderr
    listed = themisto("list", "--json", store=store)
    ids = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
    exported = themisto("export", "--all", "--out", str(work / "all.jsonl"), store=store)
    assert exported.returncode == 0, exported.stderr
    one = themisto("export", ids[0], "--out", str(work / "t.jsonl"), store=store)
    assert one.returncode == 0, one.stderr
    sft = themisto("export", "--all", "--format", "sft", "--context", "none,full",
                   "--budget", "2500", "--split", "train=0.7,test=0.3", "--seed", "1",
                   "--out", str(work / "sft.jsonl"), store=store)
    assert sft.returncode == 0, sft.stderr
    return {"work": work, "store": store, "ids": ids, "stdout": made.stdout,
            "all": work / "all.jsonl", "trajectories": work / "t.jsonl",
            "sft": work / "sft.jsonl"}


def test_synth_records_every_cell_in_real_kernels(corpus):
    manifest = json.loads((corpus["work"] / "nb" / "manifest.json").read_text())
    cells = sum(n["cells"] for n in manifest["notebooks"])
    assert len(corpus["ids"]) == 3
    assert f"recorded {cells} steps" in corpus["stdout"]
    steps = [json.loads(line) for line in corpus["all"].read_text().splitlines()]
    assert len(steps) == cells
    # programs run in order: the only errors are the mistakes written in on purpose
    errors = [s for s in steps if s.get("error")]
    assert all(s["error"]["ename"] in ("NameError", "KeyError", "IndexError",
                                       "ZeroDivisionError") for s in errors)
    assert len(errors) <= max(2, cells // 8)


def test_lora_weights_round_trip_through_gguf(tmp_path: Path):
    rng = np.random.default_rng(0)
    weights = {
        "base_model.model.model.layers.3.mlp.up_proj.lora_A.weight": rng.normal(size=(8, 576)),
        "base_model.model.model.layers.3.mlp.up_proj.lora_B.weight": rng.normal(size=(1536, 8)),
        "base_model.model.model.layers.29.self_attn.v_proj.lora_A.weight":
            rng.normal(size=(8, 576)),
        "base_model.model.model.layers.29.self_attn.v_proj.lora_B.weight":
            rng.normal(size=(192, 8)),
    }
    path = tmp_path / "a.gguf"
    write_adapter(path, weights, alpha=16)
    meta, tensors = read_adapter(path)
    assert meta == {"architecture": "llama", "type": "adapter", "adapter_type": "lora",
                    "alpha": 16.0}
    assert sorted(tensors) == sorted(gguf_name(n) for n in weights)
    for name, array in weights.items():
        np.testing.assert_array_equal(tensors[gguf_name(name)], array.astype(np.float32))
    assert gguf_name("x.layers.3.mlp.up_proj.lora_A.weight") == "blk.3.ffn_up.weight.lora_a"
    with pytest.raises(ValueError, match="not a LoRA weight"):  # permuted rows in llama.cpp
        gguf_name("x.layers.0.self_attn.q_proj.lora_A.weight")
    assert not list(tmp_path.glob(".*partial"))


def test_finetune_trains_checkpoints_resumes_and_local_applies_the_adapter(corpus, tmp_path):
    out = tmp_path / "adapter.gguf"
    args = ("finetune", str(corpus["sft"]), "--out", str(out), "--epochs", "0.1",
            "--accumulate", "2", "--max-tokens", "1024", "--threads", "2")
    # a budget that ends the run after its first pair leaves a checkpoint to resume
    first = themisto(*args, "--max-minutes", "0.0001")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "adapter.gguf.ckpt").is_file()
    assert "budget of" in first.stdout and "loss" in first.stdout
    refused = themisto(*args)
    assert refused.returncode == 1 and "--resume" in refused.stderr
    other = themisto(*args, "--resume", "--seed", "3")
    assert other.returncode == 1 and "seed" in other.stderr
    resumed = themisto(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout and "pair" in resumed.stderr  # the progress bar
    assert not (tmp_path / "adapter.gguf.ckpt").exists()
    recipe = json.loads((tmp_path / "adapter.json").read_text())
    train_lines = [json.loads(line) for line in corpus["sft"].read_text().splitlines()
                   if json.loads(line)["split"] == "train"]
    assert recipe["pairs"] == len(train_lines) and recipe["split"] == "train"
    usable = recipe["pairs"] - recipe["pairs_too_long"]  # longer than --max-tokens: skipped
    assert recipe["pairs_trained"] == -(-usable // 10) > 1
    assert recipe["optimizer_steps"] >= 1 and np.isfinite(recipe["loss_last_10"])
    assert recipe["command"].startswith("themisto finetune")
    meta, tensors = read_adapter(out)
    assert meta["alpha"] == 16.0 and len(tensors) == 12 * 5 * 2  # top 12 layers, 5 targets
    # llama.cpp applies it over the quantised base
    step = str(len(corpus["trajectories"].read_text().splitlines()) // 3)
    predicted = themisto("predict", str(corpus["trajectories"]), "--step", step, "--task",
                         "output", "--context", "full", "--predictor", f"local+{out}")
    assert predicted.returncode == 0, predicted.stderr
    assert "local+adapter.gguf (SmolLM2-135M-Instruct.Q4_1.gguf+adapter.gguf)" \
        in predicted.stderr + predicted.stdout


def test_a_missing_adapter_is_a_clear_error(corpus, tmp_path):
    result = themisto("predict", str(corpus["trajectories"]), "--step", "6", "--task",
                      "output", "--context", "none", "--predictor",
                      f"local+{tmp_path / 'nothing.gguf'}")
    assert result.returncode == 1
    assert "No LoRA adapter file at" in result.stderr


def test_the_committed_adapter_answers_differently_from_the_base_model(corpus):
    recipe = json.loads(COMMITTED.with_suffix(".json").read_text())
    assert recipe["adapter"] == COMMITTED.name
    answers: dict[str, list[str]] = {"local": [], f"local+{COMMITTED}": []}
    steps = len(corpus["trajectories"].read_text().splitlines())
    for predictor, found in answers.items():
        for step in (8, 12, steps - 2):
            result = themisto("predict", str(corpus["trajectories"]), "--step", str(step),
                              "--task", "output", "--context", "full", "--budget", "2500",
                              "--predictor", predictor, "--json")
            assert result.returncode == 0, result.stderr
            found.append(json.loads(result.stdout)["answer"])
    assert answers["local"] != answers[f"local+{COMMITTED}"]


def test_adapter_forms_of_the_local_predictors(tmp_path: Path):
    from themisto_ext.prediction.clients import (
        PredictorSpecError,
        check_predictor_name,
        make_predictor,
        split_adapter,
    )
    from themisto_ext.server.app import ThemistoExtension

    assert split_adapter("local+/a/b.gguf") == ("local", Path("/a/b.gguf"))
    assert split_adapter("local:/m.gguf+/a.gguf") == ("local:/m.gguf", Path("/a.gguf"))
    assert split_adapter("openai:x+y.gguf") == ("openai:x+y.gguf", None)
    with pytest.raises(PredictorSpecError):
        check_predictor_name("copy-previous+a.gguf")
    assert make_predictor("hybrid+/a/b.gguf").name == "hybrid+b.gguf"
    assert make_predictor("local", local_adapter=Path("/a/c.gguf")).name == "local+c.gguf"
    # the server's setting applies to local and hybrid where they name no adapter; both then
    # share one model process, which a spec naming another adapter does not
    app = ThemistoExtension(local_adapter=str(tmp_path / "s.gguf"),
                            predictors=["hybrid", "local", "local+/o/other.gguf"])
    made = app._make_predictors()
    assert [p.name for p in made] == ["hybrid+s.gguf", "local+s.gguf", "local+other.gguf"]
    local, other = made[1], made[2]
    assert local._process is made[0]._model._process
    assert other._process is not local._process
    assert local._process._config.adapter_path == str(tmp_path / "s.gguf")
