"""The code's layout as the README describes it: one folder per stage of the data flow, and
every import, at module level or inside a function, pointing one way along it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spamnb"
# The stages in the README's order; a module imports only from its own folder or an earlier one.
STAGES = ("mail", "text", "bayes", "models", "pipe", "run", "scale", "serve", "cli")


def imports() -> dict[str, set[str]]:
    """Each module of the package (dotted, without `spamnb.`) -> the package's modules it imports."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        targets = found.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("spamnb."):
                module = node.module.removeprefix("spamnb.")
                # `from spamnb.models import trust` names a module; `from spamnb.models.trust import X` a name in one.
                targets.update(f"{module}.{alias.name}" if (PACKAGE / module / f"{alias.name}.py").exists() else module for alias in node.names)
            elif isinstance(node, ast.Import):
                targets.update(alias.name.removeprefix("spamnb.") for alias in node.names if alias.name.startswith("spamnb."))
    return found


def test_every_import_points_down_the_data_flow() -> None:
    backwards = []
    for module, targets in imports().items():
        here = module.split(".")[0]
        for target in targets:
            there = target.split(".")[0]
            if here in STAGES and there in STAGES and STAGES.index(there) > STAGES.index(here):
                backwards.append(f"{module} -> {target}")
    assert not backwards


def test_no_two_modules_import_each_other() -> None:
    found = imports()
    mutual = sorted(f"{a} <-> {b}" for a, targets in found.items() for b in targets if a < b and a in found.get(b, ()))
    assert not mutual


def test_the_readme_names_the_stages_in_this_order() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = text[text.index("The code follows one data flow") :].split("\n\n")[0]
    named = [m for m in re.findall(r"`(\w+)", paragraph) if m in STAGES]
    assert list(dict.fromkeys(named)) == list(STAGES)
