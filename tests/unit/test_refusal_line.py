"""A refused declaration ends the process in its one line (eo/__init__.py), whatever imported it."""

import pytest

import eo
from eo.core.declaration import DeclarationRefused
from eo.core.sources import SourceRefused

pytestmark = pytest.mark.unit


class Exited(Exception):
    pass


def test_a_refused_declaration_is_its_one_line_and_exit_2(monkeypatch, capsys):
    def exit_with(code):
        raise Exited(code)

    monkeypatch.setattr(eo.os, "_exit", exit_with)
    for refused in (SourceRefused("source clicks refused: x"), DeclarationRefused("gold table 't' refused: y")):
        with pytest.raises(Exited) as exited:
            eo.refusal_line(type(refused), refused, None)
        assert exited.value.args == (2,)
        assert capsys.readouterr().err == f"{refused}\n"


def test_any_other_failure_goes_to_the_hook_before_it():
    seen = []
    failure = RuntimeError("a bug")
    eo.refusal_line(RuntimeError, failure, None, previous=lambda *args: seen.append(args))
    assert seen == [(RuntimeError, failure, None)]
