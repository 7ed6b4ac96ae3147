"""The command line's one dialect, in process: every option of every subcommand has a help text,
--workspace defaults to the current folder everywhere it is taken, a mistyped option is named."""

from __future__ import annotations

import argparse

import pytest

from flowbaby.cli import FlowbabyParser, build_parser


def _parsers(parser: argparse.ArgumentParser, name: str = "flowbaby") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                found += _parsers(child, f"{name} {sub}")
    return found


def test_every_option_has_help_and_workspace_defaults_to_the_folder() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 15
    for name, parser in parsers:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            assert action.help, f"{name} {'/'.join(action.option_strings) or action.dest} has no help"
            if "--workspace" in action.option_strings:
                expected = {"flowbaby demo": ".flowbaby-demo", "flowbaby hook": None}.get(name, ".")
                assert action.default == expected, name  # a hook's workspace is its JSON's cwd
                assert not action.required, name


def test_a_mistyped_option_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert isinstance(parser, FlowbabyParser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["sessions", "list", "--sorce", "opencode"])
    assert exit_.value.code == 2
    assert "did you mean --source for --sorce?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["graph", "stats", "--jason"])
    assert "--json for --jason" in capsys.readouterr().err
