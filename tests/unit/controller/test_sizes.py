"""The controller stays readable in parts: no class of `controller/` is longer than
MAX_CLASS_LINES lines and no function longer than MAX_FUNCTION_LINES (counted by the ast module,
decorators and docstrings included), so a class holds one concern and a function one step a
reader can follow in one pass."""
from __future__ import annotations

import ast
from pathlib import Path

CONTROLLER = Path(__file__).resolve().parents[3] / "controller"
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def too_long(root: Path, kinds: tuple[type, ...], limit: int) -> list[str]:
    """`path:line Name (N lines)` of every ``kinds`` node under ``root`` over ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, kinds):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - start + 1
                if lines > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} "
                               f"({lines} lines)")
    return out


def test_no_controller_class_is_longer_than_the_bar() -> None:
    found = too_long(CONTROLLER, (ast.ClassDef,), MAX_CLASS_LINES)
    assert not found, f"classes over {MAX_CLASS_LINES} lines:\n" + "\n".join(found)


def test_no_controller_function_is_longer_than_the_bar() -> None:
    found = too_long(CONTROLLER, FUNCTIONS, MAX_FUNCTION_LINES)
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(found)


def test_the_scan_sees_long_classes_and_methods(tmp_path: Path) -> None:
    pkg = tmp_path / "controller"
    pkg.mkdir()
    body = "\n".join(f"        x{i} = {i}" for i in range(5))
    (pkg / "m.py").write_text(f"class Short:\n    pass\n\n\n@dec\nclass Long:\n    def f(self):\n{body}\n")
    assert too_long(pkg, (ast.ClassDef,), 5) == ["controller/m.py:6 Long (8 lines)"]
    assert too_long(pkg, FUNCTIONS, 5) == ["controller/m.py:7 f (6 lines)"]
    assert too_long(pkg, FUNCTIONS, 6) == []
