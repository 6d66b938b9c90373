"""Every verb answers `-h` (the verbs are read from the parser, so a new one is covered),
`import` and `export --kind` list their valid values, and each source of `import` has a help of
its own: what it imports, its own options only, and examples."""

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


def test_each_import_source_has_its_own_help():
    from loaders.sources import loaders

    sources = loaders()
    helps = {}
    for source in sources:
        done = kernelindex("import", source.key, "-h")
        assert done.returncode == 0, done.stderr
        text = " ".join(done.stdout.split())
        helps[source.key] = text
        assert source.description in text and " ".join(source.about.split()) in text
        for other in sources:
            for option in other.options:
                assert (option.flag in text) == (other is source or option.flag in {o.flag for o in source.options})
        examples = done.stdout.split("examples:\n", 1)[1].splitlines()
        assert examples and examples[0].strip().startswith(f"kernelindex import {source.key}")
    catalog = kernelindex("import", "kernelindex-catalog", "-h").stdout
    assert "FILE|URL" in catalog and "--snapshot" not in catalog and "examples:" in catalog
    helps["kernelindex-catalog"] = catalog
    assert len(set(helps.values())) == len(helps)  # no two print the same text
