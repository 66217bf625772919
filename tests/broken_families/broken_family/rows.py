import json
from dataclasses import dataclass
from typing import Optional

from pytest_researchqa.dataset import Dataset, DatasetError


@dataclass(frozen=True)
class ShardRow:
    row_id: str
    question: str
    question_type: str = "shard"
    domain: Optional[str] = None
    paper_id: Optional[str] = None


@dataclass(frozen=True)
class PartialRow:  # no question_type, domain nor paper_id
    row_id: str
    question: str


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load(path):
    return Dataset(path, [ShardRow(str(d["id"]), d["shard"]) for d in _lines(path)], [])


def load_refusing(path):
    raise DatasetError(f"{path.name}: line 2 has no shard")


def load_dicts(path):
    return Dataset(path, [{"row_id": str(d["id"]), "question": d["shard"]} for d in _lines(path)], [])


def load_partial(path):
    return Dataset(path, [PartialRow(str(d["id"]), d["shard"]) for d in _lines(path)], [])


def load_list(path):
    return [ShardRow(str(d["id"]), d["shard"]) for d in _lines(path)]


def echo(question, paper, row=None):
    return question


def raising_renderer(records, family, results):
    raise ValueError("the renderer of broken_family fell over")


def raising_step(records, services, settings, say):
    raise RuntimeError("the end-of-run step of broken_family fell over")
