"""The contract as tests read it: INGEST_CONTRACT.md (sections 1-8 and the index) and the
surfaces split out into docs/contract/, one text, so a code documented in either counts."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_FILES = (ROOT / "INGEST_CONTRACT.md", *sorted((ROOT / "docs" / "contract").glob("*.md")))


def contract_lines() -> list[str]:
    """Every line of every contract file, INGEST_CONTRACT.md first, then docs/contract/ by name."""
    return [line for path in CONTRACT_FILES for line in path.read_text(encoding="utf-8").splitlines()]


def contract_text() -> str:
    return "\n".join(contract_lines())
