"""Every verb answers `-h` (the verbs are read from the parser, so a new one is covered), and
`import` and `export --kind` list their valid values."""

import argparse

import pytest

from cli import build_parser
from tests.command import kernelindex


def _verbs(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*prefix, name))
                found += _verbs(sub, (*prefix, name))
    return found


VERBS = _verbs(build_parser())


def test_the_parser_has_the_documented_verbs():
    assert {("serve",), ("runner",), ("bench",), ("jobs", "claim"), ("keys", "create"), ("import",)} <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(v) for v in VERBS])
def test_every_verb_answers_help(verb):
    done = kernelindex(*verb, "-h")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: kernelindex {' '.join(verb)}")


def test_import_and_export_list_their_values():
    assert "sol-execbench" in kernelindex("import", "-h").stdout
    wrong = kernelindex("import", "nowhere")
    assert wrong.returncode == 2 and "invalid choice: 'nowhere'" in wrong.stderr and "sol-execbench" in wrong.stderr
    assert "BenchmarkRun" in kernelindex("export", "-h").stdout
    wrong = kernelindex("export", "--kind", "Nope")
    assert wrong.returncode == 2 and "--kind" in wrong.stderr and "BenchmarkRun" in wrong.stderr
