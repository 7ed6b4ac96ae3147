"""The process environment, read and written in one place.

Every FLOWBABY_* name a process takes from its environment, the host folders (XDG_*,
CLAUDE_CONFIG_DIR, HOME) and the switches third-party libraries read at import go through
here, so one module says which names exist and how they parse. A workspace's settings are built
from this and the trusted `.env` (graph.core.trust, graph.core.settings.load_settings) and passed
down; the process-wide ones (the backend's URL, the owner's runtime folder, a team server's pool)
are read where they are needed from `Environment.read()`, a snapshot taken on the call (tests set
variables between calls). Child processes get theirs through graph.core.child_python.child_env.
Standard library only: the command line reads it before loading the engine.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OFF_WORDS = ("0", "false", "off", "no")
"""What switches a default-on flag (FLOWBABY_CAPTURE, FLOWBABY_CAPTURE_LLM) off."""
SETTING_PREFIXES = ("FLOWBABY_", "LLM_")


@dataclass(frozen=True)
class Environment:
    """One snapshot of the process environment."""

    values: Mapping[str, str]

    @classmethod
    def read(cls) -> Environment:
        return cls(dict(os.environ))

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default)

    def settings(self) -> dict[str, str]:
        """Every FLOWBABY_* and LLM_* value (a workspace's settings start from these)."""
        return {key: value for key, value in self.values.items() if key.startswith(SETTING_PREFIXES)}

    def flag(self, name: str, default: bool = True) -> bool:
        """A default-on switch: off only for 0, false, off or no (any case)."""
        raw = self.values.get(name)
        if raw is None:
            return default
        return raw.strip().lower() not in OFF_WORDS

    @property
    def capture_user_preferences(self) -> bool:
        """FLOWBABY_CAPTURE_USER_PREFERENCES=1: a capture also proposes the person's own way of working
        (graph/capture/preference.py) as user memories. Off unless set, and read from the process
        environment only (the person's shell or client config), never a workspace's `.env`: a cloned
        repository must not decide what goes into the person's own store."""
        return self.flag("FLOWBABY_CAPTURE_USER_PREFERENCES", default=False)

    def seconds(self, name: str, default: float) -> float:
        """A number of seconds; unset or empty: `default`. ValueError for anything else."""
        return float(self.values.get(name) or default)

    def _folder(self, name: str, default: Path) -> Path:
        return Path(self.values.get(name) or default)

    @property
    def config_home(self) -> Path:
        return self._folder("XDG_CONFIG_HOME", Path.home() / ".config")

    @property
    def data_home(self) -> Path:
        return self._folder("XDG_DATA_HOME", Path.home() / ".local" / "share")

    @property
    def cache_home(self) -> Path:
        return self._folder("XDG_CACHE_HOME", Path.home() / ".cache")

    @property
    def state_home(self) -> Path:
        return self._folder("XDG_STATE_HOME", Path.home() / ".local" / "state")

    @property
    def seal_key(self) -> Path:
        """This user's seal key (graph.core.seal): FLOWBABY_SEAL_KEY, else `.local/share/flowbaby/seal.key`
        under the real uid's home in the password database. Not $XDG_DATA_HOME nor $HOME: a Flatpak or
        Snap client, or one launched with isolated XDG folders, sets those to folders of its own, and the
        service it started would then refuse every store the person sealed (docs/contract/09-workspace-files.md)."""
        return self._folder("FLOWBABY_SEAL_KEY", account_home() / ".local" / "share" / "flowbaby" / "seal.key")

    @property
    def legacy_seal_key(self) -> Path:
        """Where the seal key was kept before (`$XDG_DATA_HOME/flowbaby/seal.key`): migrated from."""
        return self.data_home / "flowbaby" / "seal.key"

    @property
    def user_store(self) -> Path:
        """The user scope's store (issue 49): a flowbaby store of its own, outside every repository:
        FLOWBABY_USER_STORE, else `$XDG_DATA_HOME/flowbaby/user` (`~/.local/share/flowbaby/user`)."""
        return self._folder("FLOWBABY_USER_STORE", self.data_home / "flowbaby" / "user").expanduser()

    @property
    def runtime_dir(self) -> str | None:
        return self.values.get("XDG_RUNTIME_DIR") or None

    def claude_home(self, home: Path | None = None) -> Path:
        """Claude Code's settings folder: CLAUDE_CONFIG_DIR, else `~/.claude`."""
        return self._folder("CLAUDE_CONFIG_DIR", (home or Path.home()) / ".claude")

    def codex_home(self, home: Path | None = None) -> Path:
        """Codex CLI's folder (config.toml, hooks.json, sessions/): CODEX_HOME, else `~/.codex`."""
        return self._folder("CODEX_HOME", (home or Path.home()) / ".codex")

    def gemini_home(self) -> Path:
        """Gemini CLI's folder: `.gemini` under GEMINI_CLI_HOME, else under the home folder."""
        return self._folder("GEMINI_CLI_HOME", Path.home()) / ".gemini"

    def copilot_home(self, home: Path | None = None) -> Path:
        """Copilot CLI's folder: COPILOT_HOME, else `~/.copilot`."""
        return self._folder("COPILOT_HOME", (home or Path.home()) / ".copilot")

    @property
    def claude_config_dir(self) -> str | None:
        return self.values.get("CLAUDE_CONFIG_DIR") or None

    @property
    def search_path(self) -> list[str]:
        """PATH's folders."""
        return [entry for entry in self.values.get("PATH", "").split(os.pathsep) if entry]

    def without(self, prefix: str) -> dict[str, str]:
        """A copy for a child process, without the variables that start with `prefix`."""
        return {key: value for key, value in self.values.items() if not key.startswith(prefix)}


def account_home() -> Path:
    """The real uid's home folder in the password database (the environment's HOME where the uid has no
    entry there, as in some containers)."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        return Path.home()


def export(values: Mapping[str, str], *, keep_set: bool = False) -> None:
    """Set variables in this process's environment, for libraries that read it (cognee, litellm,
    tiktoken, the Hugging Face tokenizers) and for the child processes started after. `keep_set`:
    leave a variable the user set as it is."""
    for key, value in values.items():
        if keep_set:
            os.environ.setdefault(key, value)
        else:
            os.environ[key] = value


def child_base() -> dict[str, str]:
    """This process's environment, copied for a child process (graph.core.child_python.child_env)."""
    return dict(os.environ)
