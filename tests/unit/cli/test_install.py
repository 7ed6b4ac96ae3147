"""`flowbaby install` merging, on temporary folders: other servers and keys kept, idempotent,
absolute workspace, the home folder refused, comments never dropped, uninstall symmetric."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from flowbaby import install
from flowbaby.agent_files import MARKER

SHAPES = {
    "claude-code": (".mcp.json", "mcpServers"),
    "opencode": ("opencode.json", "mcp"),
    "gemini": (".gemini/settings.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", "mcpServers"),
    "vscode": (".vscode/mcp.json", "servers"),
}


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "home" / "project"
    workspace.mkdir(parents=True)
    for variable in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME"):
        monkeypatch.delenv(variable, raising=False)
    return home, workspace


def _install(client: install.Client, home: Path, workspace: Path, **kw: object) -> list[install.Change]:
    changes = install.plan(client, "project", workspace, home=home, **kw)  # type: ignore[arg-type]
    install.apply(changes)
    return changes


@pytest.mark.parametrize("client", SHAPES)
def test_merges_without_clobbering_and_is_idempotent(client: install.Client, dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    name, key = SHAPES[client]
    path = workspace / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: {"other": {"command": "other-server"}}, "theme": "dark"}))
    first = _install(client, home, workspace)
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data[key]["other"] == {"command": "other-server"}
    entry = data[key]["flowbaby"]
    command = entry["command"] if client == "opencode" else [entry["command"], *entry["args"]]
    assert command[-3:] == ["mcp", "--workspace", str(workspace)]
    if client == "opencode":
        assert entry["type"] == "local"
    assert any(c.changed for c in first)
    second = install.plan(client, "project", workspace, home=home)
    assert not any(c.changed for c in second)  # idempotent

    install.apply(install.plan(client, "project", workspace, home=home, remove=True))
    data = json.loads(path.read_text())
    assert "flowbaby" not in data[key] and data[key]["other"] and data["theme"] == "dark"
    assert not [p for c in first[1:] for p in [c.path] if p.exists()]  # agent files gone


def test_writes_the_skill_and_the_copilot_agent(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    _install("claude-code", home, workspace)
    _install("opencode", home, workspace)
    _install("vscode", home, workspace)
    for skill in (".claude/skills/flowbaby-memory/SKILL.md", ".opencode/skills/flowbaby-memory/SKILL.md"):
        text = (workspace / skill).read_text()
        assert text.startswith("---\nname: flowbaby-memory\n") and MARKER in text
    agent = (workspace / ".github/agents/memory-aware.agent.md").read_text()
    assert "flowbaby_retrieveMemory" in agent and "tools:" in agent


def test_refuses_home_unless_forced_and_relative_paths(dirs: tuple[Path, Path]) -> None:
    home, _ = dirs
    with pytest.raises(install.InstallError, match="home directory"):
        install.plan("cursor", "project", home, home=home)
    assert install.plan("cursor", "project", home, home=home, force=True)
    with pytest.raises(install.InstallError, match="absolute"):
        install.plan("cursor", "project", Path("project"), home=home)


def test_a_commented_file_is_never_rewritten(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    path = workspace / ".vscode" / "mcp.json"
    path.parent.mkdir()
    text = '{\n  // my servers\n  "servers": {"other": {"command": "x"},},\n}\n'
    path.write_text(text)
    with pytest.raises(install.InstallError, match="comments") as caught:
        install.plan("vscode", "project", workspace, home=home)
    assert '"flowbaby"' in str(caught.value)  # the entry to paste
    assert path.read_text() == text


def test_foreign_agent_files_need_force(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    skill = workspace / ".claude/skills/flowbaby-memory/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("my own skill")
    with pytest.raises(install.InstallError, match="--force"):
        install.plan("claude-code", "project", workspace, home=home)
    install.apply(install.plan("claude-code", "project", workspace, home=home, remove=True))
    assert skill.read_text() == "my own skill"  # uninstall leaves what it did not write


def test_user_scope_files(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    home, workspace = dirs
    assert install.config_file("cursor", "user", workspace, home) == (home / ".cursor/mcp.json", "mcpServers")
    assert install.config_file("opencode", "user", workspace, home)[0] == home / ".config/opencode/opencode.json"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    assert install.config_file("claude-code", "user", workspace, home)[0] == home / "claude/.claude.json"


def test_dry_run_prints_and_writes_nothing(dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, workspace = dirs
    assert install.run("cursor", "project", str(workspace), dry_run=True, force=False) == 0
    assert '+    "flowbaby": {' in capsys.readouterr().out
    assert not (workspace / ".cursor").exists()


def test_allow_tools_adds_the_rule_keeping_the_rest_and_uninstall_takes_it_out(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"], "deny": ["Read(.env)"]}, "model": "x"}))
    plain = install.plan("claude-code", "project", workspace, home=home, hooks=False)
    assert not any(c.path == settings and c.changed for c in plain)
    _install("claude-code", home, workspace, allow_tools=True, hooks=False)
    data = json.loads(settings.read_text())
    assert data == {"permissions": {"allow": ["Bash(ls)", "mcp__flowbaby__*"], "deny": ["Read(.env)"]}, "model": "x"}
    _install("claude-code", home, workspace, allow_tools=True)  # with the hooks: one file, both changes
    data = json.loads(settings.read_text())
    assert data["permissions"]["allow"] == ["Bash(ls)", "mcp__flowbaby__*"] and data["hooks"]
    again = install.plan("claude-code", "project", workspace, home=home, allow_tools=True)
    assert not any(c.changed for c in again)
    install.apply(install.plan("claude-code", "project", workspace, home=home, remove=True))
    left = json.loads(settings.read_text())
    assert left["permissions"]["allow"] == ["Bash(ls)"] and "hooks" not in left


def test_allow_tools_never_rewrites_a_commented_settings_file(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "permissions": {"allow": []}\n}\n')
    with pytest.raises(install.InstallError, match="by hand"):
        install.plan("claude-code", "project", workspace, home=home, allow_tools=True)


CODEX_CONFIG = """# my model
model = "o3"

[mcp_servers.other]
command = "other-server"  # keep me

[profiles.fast]
model = "o4-mini"
"""


def test_codex_config_toml_keeps_comments_and_tables(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    folder = workspace / ".codex"
    folder.mkdir()
    (folder / "config.toml").write_text(CODEX_CONFIG)
    mine = {"type": "command", "command": "my-own-hook"}
    (folder / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [mine]}]}}))
    _install("codex", home, workspace)
    text = (folder / "config.toml").read_text()
    data = tomllib.loads(text)
    assert "# my model" in text and "# keep me" in text
    assert data["profiles"] == {"fast": {"model": "o4-mini"}} and data["mcp_servers"]["other"]
    assert data["mcp_servers"]["flowbaby"]["args"][-2:] == ["--workspace", str(workspace)]
    hooks = json.loads((folder / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    assert hooks["SessionStart"][0]["hooks"] == [mine]
    assert "--client codex" in hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert not any(c.changed for c in install.plan("codex", "project", workspace, home=home))  # idempotent

    install.apply(install.plan("codex", "project", workspace, home=home, remove=True))
    assert tomllib.loads((folder / "config.toml").read_text()) == tomllib.loads(CODEX_CONFIG)
    assert "# keep me" in (folder / "config.toml").read_text()
    assert json.loads((folder / "hooks.json").read_text()) == {"hooks": {"SessionStart": [{"hooks": [mine]}]}}


def test_codex_server_written_another_way_is_left_to_the_user(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    (workspace / ".codex").mkdir()
    (workspace / ".codex" / "config.toml").write_text('mcp_servers = { flowbaby = { command = "old" } }\n')
    with pytest.raises(install.InstallError, match="by hand"):
        install.plan("codex", "project", workspace, home=home)
    (workspace / ".codex" / "config.toml").write_text("model = [unclosed\n")
    with pytest.raises(install.InstallError, match="not valid TOML"):
        install.plan("codex", "project", workspace, home=home)


def test_gemini_servers_and_hooks_share_one_settings_file(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    path = workspace / ".gemini" / "settings.json"
    path.parent.mkdir()
    mine = {"type": "command", "command": "my-own-hook"}
    path.write_text(json.dumps({"theme": "dark", "hooks": {"BeforeAgent": [{"hooks": [mine]}]}}))
    _install("gemini", home, workspace)
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data["mcpServers"]["flowbaby"]["args"][-1] == str(workspace)
    before_agent = [h for group in data["hooks"]["BeforeAgent"] for h in group["hooks"]]
    assert before_agent[0] == mine and "UserPromptSubmit" in before_agent[1]["command"]
    assert "--client gemini" in before_agent[1]["command"]
    assert set(data["hooks"]) == {"SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd"}
    assert not any(c.changed for c in install.plan("gemini", "project", workspace, home=home))
    install.apply(install.plan("gemini", "project", workspace, home=home, remove=True))
    data = json.loads(path.read_text())
    assert data == {"theme": "dark", "mcpServers": {}, "hooks": {"BeforeAgent": [{"hooks": [mine]}]}}


def test_copilot_cli_is_user_scope(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    with pytest.raises(install.InstallError, match="--scope user"):
        install.plan("copilot", "project", workspace, home=home)
    install.apply(install.plan("copilot", "user", workspace, home=home))
    entry = json.loads((home / ".copilot" / "mcp-config.json").read_text())["mcpServers"]["flowbaby"]
    assert entry["type"] == "local" and entry["tools"] == ["*"] and entry["args"][-1] == str(workspace)
