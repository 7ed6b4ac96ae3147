"""Which rows cognify may read (graph.cognify.worker.cognee_state.unstaged_row), and flowbaby's own
`.flowbaby/.gitignore` (graph.core.workspace.keep_out_of_git): issue 58 items 2 and 3. The real
processes are driven by tests/integration/test_cognee_folder_trust.py and test_git_ignore_trust.py."""

from __future__ import annotations

from pathlib import Path

from graph.cognify.worker.cognee_state import unstaged_row
from graph.core.workspace import GIT_IGNORE, keep_out_of_git, resolve_workspace


def test_only_a_plain_file_of_the_data_folder_may_be_read(tmp_path: Path) -> None:
    data = tmp_path / "my project" / ".flowbaby" / "cognee" / "data"
    data.mkdir(parents=True)
    stored = data / "text_0123abcd.txt"
    stored.write_text("a memory")
    (data / "text_link.txt").symlink_to(stored)
    assert unstaged_row(stored.as_uri(), data) is None  # percent-encoded space and all
    for location in (
        "file:///proc/self/environ",
        (tmp_path / "id_ed25519").as_uri(),
        f"file://{data}/../../../secret.txt",
        str(stored),  # not a URI
        (data / "text_link.txt").as_uri(),
        (data / "text_missing.txt").as_uri(),
        None,
    ):
        assert unstaged_row(location, data) is not None, location


def test_the_gitignore_is_rewritten_never_through_a_link(tmp_path: Path) -> None:
    paths = resolve_workspace(tmp_path)
    target = tmp_path / "bashrc"
    target.write_text("# mine\n")
    paths.git_ignore.unlink()
    paths.git_ignore.symlink_to(target)
    keep_out_of_git(paths)
    assert not paths.git_ignore.is_symlink() and paths.git_ignore.read_text() == GIT_IGNORE
    assert target.read_text() == "# mine\n"
    paths.git_ignore.write_text("*\n!memories.sqlite\n")
    keep_out_of_git(paths)
    assert paths.git_ignore.read_text() == GIT_IGNORE
