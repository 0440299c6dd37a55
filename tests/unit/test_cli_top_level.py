"""The top-level ``cbt`` parser, as the original CBT's binary: ``cbt --config FILE`` alone runs every service,
``--config`` before a command is that command's, and ``cbt version`` says what is installed."""

from __future__ import annotations

import platform

import pytest

from cbt.cli import main, parse, version_cmd


def test_config_alone_runs_every_service() -> None:
    args = parse(["--config", "deploy/config.yaml"])
    assert (args.command, args.service, args.config, args.until_idle) == ("run", "all", "deploy/config.yaml", None)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["--config", "a.yaml", "validate"], "a.yaml", id="before-the-command"),
        pytest.param(["validate", "--config", "b.yaml"], "b.yaml", id="after-the-command"),
        pytest.param(["--config", "a.yaml", "validate", "--config", "b.yaml"], "b.yaml", id="after-wins"),
        pytest.param(["validate"], None, id="none"),
    ],
)
def test_a_config_before_the_command_is_the_command_s(argv: list[str], expected: str | None) -> None:
    assert parse(argv).config == expected


def test_no_command_and_no_config_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse([])
    assert info.value.code == 2
    assert "a command is required (or --config FILE alone, to run every service)" in capsys.readouterr().err


def test_version_prints_version_commit_and_python(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(version_cmd.COMMIT_ENV_VAR, "0123456789ab")
    assert main(["version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Version: {version_cmd.installed_version()}" and lines[0] != "Version: "
    assert lines[1] == "Commit: 0123456789ab"
    assert lines[2].startswith(f"Python: {platform.python_version()} (")


def test_without_the_variable_the_commit_is_the_checkout_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(version_cmd.COMMIT_ENV_VAR, raising=False)
    found = version_cmd.commit()
    assert found is None or (len(found) == 12 and all(c in "0123456789abcdef" for c in found))
