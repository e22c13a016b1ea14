from themisto_ext.prediction.scoring import reference_for, scored


def record(answer: str, task: str = "output", error: dict | None = None) -> dict:
    return {"task": task, "answer": answer, "error": error}


def test_scores_against_the_right_reference():
    step = {"output": "42", "code": "x + 1"}
    assert reference_for("output", step) == "42" and reference_for("next-cell", step) == "x + 1"
    assert scored(record("42"), step)["scores"] == {"exact_match": 1.0, "rouge_l": 1.0,
                                                     "chrf": 1.0}
    nxt = scored(record("x + 2", "next-cell"), step)
    assert nxt["reference"] == "x + 1" and 0 < nxt["scores"]["chrf"] < 1


def test_nothing_predicted_for_a_silent_cell_is_exactly_right():
    assert scored(record(""), {"output": "", "code": "x = 1"})["scores"]["rouge_l"] == 1.0
    assert scored(record(""), {"output": "41", "code": "x"})["scores"]["rouge_l"] == 0.0


def test_failed_calls_are_not_scored():
    done = scored(record("", error={"type": "ProviderTimeoutError", "message": "t"}),
                  {"output": "1", "code": "1"})
    assert done["scores"] is None and done["reference"] == "1"
