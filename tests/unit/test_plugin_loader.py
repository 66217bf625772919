"""plugin.load: a start-up module imported by Python's own loader, as the import system would."""

from __future__ import annotations

import sys

import pytest

from pytest_researchqa import plugin


def test_a_loaded_module_is_the_one_already_imported():
    import pytest_researchqa.options as options

    assert plugin.load("options") is options is sys.modules["pytest_researchqa.options"]


def test_a_module_that_fails_to_import_leaves_nothing_behind(tmp_path, monkeypatch):
    package = sys.modules["pytest_researchqa"]
    (tmp_path / "broken_for_the_loader.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    with pytest.raises(RuntimeError, match="broken at import"):
        plugin.load("broken_for_the_loader")
    assert "pytest_researchqa.broken_for_the_loader" not in sys.modules
    assert not hasattr(package, "broken_for_the_loader")


def test_the_type_stub_declares_each_public_name_from_the_module_that_exports_it():
    """``__init__.pyi`` is what mypy reads for the package: a name added to ``exports`` without it (or from
    another module) would type-check against nothing."""
    import ast
    from pathlib import Path

    import pytest_researchqa
    from pytest_researchqa.exports import EXPORTS

    stub = ast.parse((Path(pytest_researchqa.__file__).parent / "__init__.pyi").read_text(encoding="utf-8"))
    declared = {alias.name: node.module for node in stub.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert declared == EXPORTS
    assert sorted(pytest_researchqa.__all__) == sorted(EXPORTS)
