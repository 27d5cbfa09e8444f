"""The controller stays readable in parts: no class of `controller/` is longer than
MAX_CLASS_LINES lines (counted by the ast module, decorators and docstrings included), so a
class holds one concern a reader can follow in one pass."""
from __future__ import annotations

import ast
from pathlib import Path

CONTROLLER = Path(__file__).resolve().parents[3] / "controller"
MAX_CLASS_LINES = 400


def long_classes(root: Path, limit: int) -> list[str]:
    """`path:line Name (N lines)` of every class under ``root`` longer than ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - start + 1
                if lines > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                               f"({lines} lines)")
    return out


def test_no_controller_class_is_longer_than_the_bar() -> None:
    found = long_classes(CONTROLLER, MAX_CLASS_LINES)
    assert not found, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(found)


def test_the_scan_sees_a_long_class(tmp_path: Path) -> None:
    pkg = tmp_path / "controller"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(5))
    (pkg / "m.py").write_text(f"class Short:\n    pass\n\n\n@dec\nclass Long:\n{body}\n")
    assert long_classes(pkg, 5) == ["controller/m.py:6 Long (7 lines)"]
